#include "tandem/quant/fp16.h"

#include <cstring>

namespace tandem::quant {

float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);  // inf / NaN (payload kept)
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else {
        // Subnormal half: normalise into a float.
        int e = 113;
        while ((mant & 0x400) == 0) {
            mant <<= 1;
            --e;
        }
        bits = sign | (static_cast<uint32_t>(e) << 23) | ((mant & 0x3ff) << 13);
    }
    return std::bit_cast<float>(bits);
}

uint16_t fp32_to_fp16(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
    const uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00 | ((abs >> 13) & 0x3ff));
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to >= 65520: inf
    if (abs >= 0x38800000u) {
        // Normal half: drop 13 mantissa bits with round-to-nearest-even; a carry into the
        // exponent is the correct result.
        const uint32_t rebased = abs - (112u << 23);
        const uint32_t rounded = rebased + 0xfffu + ((rebased >> 13) & 1);
        return static_cast<uint16_t>(sign | (rounded >> 13));
    }
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal: +-0
    // Subnormal half: value = mant * 2^-24; shift the full significand, round to nearest even.
    const uint32_t exp = abs >> 23;
    const uint32_t sig = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14..24 for exp 102..112
    const uint32_t half = 1u << (shift - 1);
    const uint32_t rest = sig & ((1u << shift) - 1);
    uint32_t q = sig >> shift;
    if (rest > half || (rest == half && (q & 1))) ++q;
    return static_cast<uint16_t>(sign | q);
}

}  // namespace tandem::quant
