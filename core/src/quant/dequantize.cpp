// Scalar dequantisation of every supported block type (the reference the kernels are tested
// against, and the path for types without a SIMD kernel).
#include "dequantize.h"

#include <cstring>

#include "blocks.h"
#include "tandem/quant/fp16.h"

namespace tandem::quant {

void q3k_scales(const uint8_t* packed, int8_t out[16]) {
    // 12 bytes: low 4 bits of scales 0..7 in bytes 0..7 (low nibbles), of 8..15 in the high
    // nibbles; the top 2 bits of all 16 in bytes 8..11.
    for (int j = 0; j < 16; ++j) {
        const int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
        const int high = (packed[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
        out[j] = static_cast<int8_t>((low | (high << 4)) - 32);
    }
}

namespace scalar {

void dequant_f16(const void* src, float* y, int64_t n) {
    const auto* s = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(s[i]);
}

void dequant_bf16(const void* src, float* y, int64_t n) {
    const auto* s = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(s[i]);
}

void dequant_q4_0(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const BlockQ4_0*>(src);
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK / 2; ++j) {
            y[j] = d * static_cast<float>((b[i].qs[j] & 0xF) - 8);
            y[j + 16] = d * static_cast<float>((b[i].qs[j] >> 4) - 8);
        }
    }
}

void dequant_q4_1(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const BlockQ4_1*>(src);
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = fp16_to_fp32(b[i].d), m = fp16_to_fp32(b[i].m);
        for (int j = 0; j < QK / 2; ++j) {
            y[j] = d * static_cast<float>(b[i].qs[j] & 0xF) + m;
            y[j + 16] = d * static_cast<float>(b[i].qs[j] >> 4) + m;
        }
    }
}

void dequant_q5_0(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const BlockQ5_0*>(src);
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = fp16_to_fp32(b[i].d);
        uint32_t qh;
        std::memcpy(&qh, b[i].qh, 4);
        for (int j = 0; j < QK / 2; ++j) {
            const int lo = (b[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4);
            const int hi = (b[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
            y[j] = d * static_cast<float>(lo - 16);
            y[j + 16] = d * static_cast<float>(hi - 16);
        }
    }
}

void dequant_q5_1(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const BlockQ5_1*>(src);
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = fp16_to_fp32(b[i].d), m = fp16_to_fp32(b[i].m);
        uint32_t qh;
        std::memcpy(&qh, b[i].qh, 4);
        for (int j = 0; j < QK / 2; ++j) {
            const int lo = (b[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4);
            const int hi = (b[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
            y[j] = d * static_cast<float>(lo) + m;
            y[j + 16] = d * static_cast<float>(hi) + m;
        }
    }
}

void dequant_q8_0(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const BlockQ8_0*>(src);
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK; ++j) y[j] = d * static_cast<float>(b[i].qs[j]);
    }
}

void dequant_q2_k(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const BlockQ2_K*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
        const uint8_t* q = b[i].qs;
        int is = 0;
        // Two halves of 128; each byte of a 32-byte run holds 4 elements, 32 apart.
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; ++part) {
                    const uint8_t sc = b[i].scales[is++];
                    const float dl = d * static_cast<float>(sc & 0xF);
                    const float ml = dmin * static_cast<float>(sc >> 4);
                    for (int l = 0; l < 16; ++l)
                        *y++ = dl * static_cast<float>((q[l + 16 * part] >> shift) & 3) - ml;
                }
            }
        }
    }
}

void dequant_q3_k(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const BlockQ3_K*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = fp16_to_fp32(b[i].d);
        int8_t sc[16];
        q3k_scales(b[i].scales, sc);
        const uint8_t* q = b[i].qs;
        const uint8_t* hm = b[i].hmask;
        int is = 0;
        uint8_t m = 1;
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
                for (int part = 0; part < 2; ++part) {
                    const float dl = d * static_cast<float>(sc[is++]);
                    for (int l = 16 * part; l < 16 * part + 16; ++l) {
                        // The high bit is stored inverted: clear means subtract 4.
                        const int v = ((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
                        *y++ = dl * static_cast<float>(v);
                    }
                }
            }
        }
    }
}

void dequant_q4_k(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const BlockQ4_K*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
        const uint8_t* q = b[i].qs;
        for (int j = 0; j < 8; j += 2, q += 32) {
            uint8_t sc, m;
            k4_scale_min(j, b[i].scales, sc, m);
            const float d1 = d * sc, m1 = dmin * m;
            k4_scale_min(j + 1, b[i].scales, sc, m);
            const float d2 = d * sc, m2 = dmin * m;
            for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
        }
    }
}

void dequant_q5_k(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const BlockQ5_K*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
        const uint8_t* ql = b[i].qs;
        const uint8_t* qh = b[i].qh;
        for (int j = 0; j < 8; j += 2, ql += 32) {
            uint8_t sc, m;
            k4_scale_min(j, b[i].scales, sc, m);
            const float d1 = d * sc, m1 = dmin * m;
            k4_scale_min(j + 1, b[i].scales, sc, m);
            const float d2 = d * sc, m2 = dmin * m;
            const uint8_t u1 = static_cast<uint8_t>(1u << j), u2 = static_cast<uint8_t>(2u << j);
            for (int l = 0; l < 32; ++l)
                *y++ = d1 * static_cast<float>((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
            for (int l = 0; l < 32; ++l)
                *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
        }
    }
}

void dequant_q6_k(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const BlockQ6_K*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = fp16_to_fp32(b[i].d);
        const uint8_t* ql = b[i].ql;
        const uint8_t* qh = b[i].qh;
        const int8_t* sc = b[i].scales;
        for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
                y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
                y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
                y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
            }
        }
    }
}

void dequant_iq4_nl(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const BlockIQ4_NL*>(src);
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK / 2; ++j) {
            y[j] = d * static_cast<float>(kIQ4Values[b[i].qs[j] & 0xF]);
            y[j + 16] = d * static_cast<float>(kIQ4Values[b[i].qs[j] >> 4]);
        }
    }
}

void dequant_iq4_xs(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const BlockIQ4_XS*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = fp16_to_fp32(b[i].d);
        for (int ib = 0; ib < 8; ++ib, y += 32) {
            const float dl = d * static_cast<float>(iq4xs_scale(b[i], ib));
            const uint8_t* qs = b[i].qs + 16 * ib;
            for (int j = 0; j < 16; ++j) {
                y[j] = dl * static_cast<float>(kIQ4Values[qs[j] & 0xF]);
                y[j + 16] = dl * static_cast<float>(kIQ4Values[qs[j] >> 4]);
            }
        }
    }
}

void dequant_q8_k(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const BlockQ8_K*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K)
        for (int j = 0; j < QK_K; ++j) y[j] = b[i].d * static_cast<float>(b[i].qs[j]);
}

}  // namespace scalar
}  // namespace tandem::quant
