#pragma once
// Dispatch-size helpers shared by the recording code: row counts over 32768 workgroups go into
// z (the shaders rebuild row = x + z * kSplit), and 32-bit push-constant fields.
#include <algorithm>
#include <cstdint>

namespace tandem::vk {

inline constexpr uint32_t kSplit = 32768;
inline uint32_t split_x(uint64_t n) {
    return static_cast<uint32_t>(std::min<uint64_t>(n, kSplit));
}
inline uint32_t split_z(uint64_t n) {
    return static_cast<uint32_t>((n + kSplit - 1) / kSplit);
}
inline uint32_t u32(int64_t v) {
    return static_cast<uint32_t>(v);
}

}  // namespace tandem::vk
