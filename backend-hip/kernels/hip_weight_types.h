#pragma once
// Device-side decoding of weight elements. f16/bf16 are decoded from their bits so the same code
// builds with hipcc and nvcc without either toolkit's half headers.
#include <cstdint>

namespace tandem::hip {

__device__ inline float f16_bits_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1fu) {
        bits = sign | 0x7f800000u | (man << 13);  // inf / nan
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {
        // Subnormal: shift the mantissa up until its leading one reaches the implicit bit.
        exp = 113u;
        while ((man & 0x400u) == 0) {
            man <<= 1;
            --exp;
        }
        bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
    }
    return __uint_as_float(bits);
}

__device__ inline float bf16_bits_to_f32(uint16_t h) {
    return __uint_as_float(uint32_t(h) << 16);
}

}  // namespace tandem::hip
