#pragma once
// IEEE half and bfloat16 <-> float conversions (round to nearest even, as ggml and numpy do).
#include <bit>
#include <cstdint>

namespace tandem::quant {

float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);

inline float bf16_to_fp32(uint16_t h) {
    return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}
// Round to nearest even; NaN stays a (quiet) NaN. Same as ggml's and the gguf package's BF16.
inline uint16_t fp32_to_bf16(float f) {
    uint32_t u = std::bit_cast<uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 64);
    return static_cast<uint16_t>((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

}  // namespace tandem::quant
