#pragma once
// Device-side decoding of weight elements. f16/bf16 are decoded from their bits so the same code
// builds with hipcc and nvcc without either toolkit's half headers.
#include <cstdint>

namespace tandem::hip {

// The hardware conversion on the GPU (one instruction). It must not branch: a scale decoded
// between a weight row's loads with a data-dependent branch (the subnormal loop this replaced)
// holds back every later load of the thread: 8B gate + up 29.5 us with it, 24.8 without (H200,
// docs/hip.md, session 8).
__device__ inline float f16_bits_to_f32(uint16_t h) {
#if defined(TANDEM_HIP_ON_CUDA) && defined(__CUDA_ARCH__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#elif defined(__HIP_DEVICE_COMPILE__)
    return float(__builtin_bit_cast(_Float16, h));
#else
    // Host passes (and the host tests): the bits moved into place, subnormals renormalised by
    // a float subtraction, inf/nan given the full exponent; selects, no loop.
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t body = uint32_t(h & 0x7fffu) << 13;  // exponent and mantissa, f32 positions
    const uint32_t exp = body & 0x0f800000u;
    const uint32_t normal = body + ((127u - 15u) << 23);
    const float sub = __uint_as_float(normal + (1u << 23)) - __uint_as_float(113u << 23);
    const uint32_t bits = exp == 0x0f800000u ? normal + ((128u - 16u) << 23)
                          : exp == 0         ? __float_as_uint(sub)
                                             : normal;
    return __uint_as_float(sign | bits);
#endif
}

__device__ inline float bf16_bits_to_f32(uint16_t h) {
    return __uint_as_float(uint32_t(h) << 16);
}

}  // namespace tandem::hip

namespace tandem::hip {

// f32 -> f16 bits, round to nearest even (as the CPU backend's KV store rounds).
__device__ inline uint16_t f32_to_f16_bits(float f) {
    const uint32_t x = __float_as_uint(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds past the largest f16
    if (ax < 0x38800000u) {
        // Subnormal or zero: scale by 2^24 in the integer domain with rounding.
        if (ax < 0x33000000u) return uint16_t(sign);
        const uint32_t e = ax >> 23;
        const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e;  // 14 + (113 - e) + ... : bits dropped
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return uint16_t(sign | r);
    }
    uint32_t r = ((ax >> 13) - (112u << 10));
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
    return uint16_t(sign | r);
}

// Q4_K/Q5_K: ggml's 6-bit scale and min of sub-block s (0..7), from the super-block's first 16
// bytes (f16 d, f16 dmin, 12 packed scale bytes) held as one 16-byte load. The bytes are picked
// by selects: s is a run-time value, and an indexed local array would spill to scratch memory.
__device__ inline void k4_scale_min(const uint4& hdr, int s, int& scale, int& min) {
    auto sc = [&](int i) {
        const uint32_t word = i < 4 ? hdr.y : (i < 8 ? hdr.z : hdr.w);
        return int((word >> (8 * (i & 3))) & 0xffu);
    };
    if (s < 4) {
        scale = sc(s) & 63;
        min = sc(s + 4) & 63;
    } else {
        scale = (sc(s + 4) & 0xF) | ((sc(s - 4) >> 6) << 4);
        min = (sc(s + 4) >> 4) | ((sc(s) >> 6) << 4);
    }
}

}  // namespace tandem::hip
