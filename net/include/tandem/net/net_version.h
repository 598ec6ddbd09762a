#pragma once
#include <cstdint>
namespace tandem::net {
// Bumped whenever a wire message changes; peers with another version are shown but cannot join.
inline constexpr uint32_t kProtocolVersion = 1;
}  // namespace tandem::net
