#pragma once
// ggml's block layouts (ggml-common.h facts), as they lie in GGUF tensor data.
#include <cstdint>

namespace tandem::quant {

inline constexpr int QK = 32;     // elements per block of the 32-element types
inline constexpr int QK_K = 256;  // elements per K-quant super-block

struct BlockQ4_0 {
    uint16_t d;          // f16 scale
    uint8_t qs[QK / 2];  // element j in low nibble of qs[j], element j+16 in the high nibble
};
struct BlockQ4_1 {
    uint16_t d, m;  // f16 scale, f16 min
    uint8_t qs[QK / 2];
};
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];  // bit j = fifth bit of element j (little-endian uint32)
    uint8_t qs[QK / 2];
};
struct BlockQ5_1 {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[QK / 2];
};
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[QK];
};
struct BlockQ8_1 {
    uint16_t d, s;  // f16 scale, f16 d * sum(qs)
    int8_t qs[QK];
};
struct BlockQ2_K {
    uint8_t scales[QK_K / 16];  // low nibble scale, high nibble min, per 16 elements
    uint8_t qs[QK_K / 4];
    uint16_t d, dmin;
};
struct BlockQ3_K {
    uint8_t hmask[QK_K / 8];
    uint8_t qs[QK_K / 4];
    uint8_t scales[12];  // 16 6-bit scales
    uint16_t d;
};
struct BlockQ4_K {
    uint16_t d, dmin;
    uint8_t scales[12];  // 8 6-bit scales and 8 6-bit mins
    uint8_t qs[QK_K / 2];
};
struct BlockQ5_K {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
};
struct BlockQ6_K {
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    uint16_t d;
};
struct BlockQ8_K {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
};

// IQ4_NL / IQ4_XS: 4-bit indices into a fixed non-linear table of int8 values.
inline constexpr int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};
struct BlockIQ4_NL {
    uint16_t d;
    uint8_t qs[QK / 2];  // nibble layout as Q4_0
};
struct BlockIQ4_XS {
    uint16_t d;
    uint16_t scales_h;     // top 2 bits of the 8 sub-block scales
    uint8_t scales_l[4];   // low 4 bits, two per byte
    uint8_t qs[QK_K / 2];  // per 32-element sub-block: 16 bytes laid out as Q4_0
};

static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// Scale and min j (0..7) of a Q4_K/Q5_K block: 6 bits each, the top two bits of 4..7 kept in the
// spare top bits of bytes 0..7.
inline void k4_scale_min(int j, const uint8_t* q, uint8_t& sc, uint8_t& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// Scale of sub-block ib (0..7) of an IQ4_XS block: 6 bits, minus 32.
inline int iq4xs_scale(const BlockIQ4_XS& b, int ib) {
    const int low = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF;
    const int high = (b.scales_h >> (2 * ib)) & 3;
    return (low | (high << 4)) - 32;
}

// The 16 signed 6-bit scales of a Q3_K block (each minus 32).
void q3k_scales(const uint8_t* packed, int8_t out[16]);

}  // namespace tandem::quant
