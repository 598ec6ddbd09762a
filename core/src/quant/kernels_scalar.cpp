// Portable dot products in ggml's integer scheme: weights and q8 activations are multiplied as
// integers per (sub-)block and scaled once per block. The SIMD kernels compute the same sums.
#include <cstring>

#include "blocks.h"
#include "kernels.h"
#include "tandem/quant/fp16.h"

namespace tandem::quant {
namespace {

float dot_f32(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const float*>(w);
    const auto* y = static_cast<const float*>(a);
    float acc[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; ++k) acc[k] += x[i + k] * y[i + k];
    for (; i < n; ++i) acc[0] += x[i] * y[i];
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

float dot_f16(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const float*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n; ++i) acc += fp16_to_fp32(x[i]) * y[i];
    return acc;
}

float dot_bf16(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const float*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n; ++i) acc += bf16_to_fp32(x[i]) * y[i];
    return acc;
}

// 5-bit value j of a Q5_0/Q5_1 block (0..31).
inline int q5_value(const uint8_t* qs, uint32_t qh, int j) {
    const int low = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
    return low | static_cast<int>(((qh >> j) & 1) << 4);
}

float dot_q4_0(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n / QK; ++i) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            sumi += ((x[i].qs[j] & 0xF) - 8) * y[i].qs[j];
            sumi += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
        }
        acc += static_cast<float>(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
    }
    return acc;
}

float dot_q4_1(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n / QK; ++i) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            sumi += (x[i].qs[j] & 0xF) * y[i].qs[j];
            sumi += (x[i].qs[j] >> 4) * y[i].qs[j + 16];
        }
        acc += static_cast<float>(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) +
               fp16_to_fp32(x[i].m) * fp16_to_fp32(y[i].s);
    }
    return acc;
}

float dot_q5_0(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n / QK; ++i) {
        uint32_t qh;
        std::memcpy(&qh, x[i].qh, 4);
        int sumi = 0;
        for (int j = 0; j < QK; ++j) sumi += (q5_value(x[i].qs, qh, j) - 16) * y[i].qs[j];
        acc += static_cast<float>(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
    }
    return acc;
}

float dot_q5_1(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n / QK; ++i) {
        uint32_t qh;
        std::memcpy(&qh, x[i].qh, 4);
        int sumi = 0;
        for (int j = 0; j < QK; ++j) sumi += q5_value(x[i].qs, qh, j) * y[i].qs[j];
        acc += static_cast<float>(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) +
               fp16_to_fp32(x[i].m) * fp16_to_fp32(y[i].s);
    }
    return acc;
}

float dot_q8_0(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ8_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n / QK; ++i) {
        int sumi = 0;
        for (int j = 0; j < QK; ++j) sumi += x[i].qs[j] * y[i].qs[j];
        acc += static_cast<float>(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
    }
    return acc;
}

float dot_q2_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ2_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        int summs = 0;
        for (int j = 0; j < 16; ++j) summs += y[i].bsums[j] * (x[i].scales[j] >> 4);
        int isum = 0, is = 0;
        const int8_t* q8 = y[i].qs;
        for (int half = 0; half < 2; ++half) {
            const uint8_t* q2 = x[i].qs + 32 * half;
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; ++part, q8 += 16) {
                    int s = 0;
                    for (int l = 0; l < 16; ++l) s += ((q2[l + 16 * part] >> shift) & 3) * q8[l];
                    isum += (x[i].scales[is++] & 0xF) * s;
                }
            }
        }
        acc += y[i].d * fp16_to_fp32(x[i].d) * static_cast<float>(isum) -
               y[i].d * fp16_to_fp32(x[i].dmin) * static_cast<float>(summs);
    }
    return acc;
}

float dot_q3_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ3_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        int8_t sc[16];
        q3k_scales(x[i].scales, sc);
        int isum = 0, is = 0;
        const int8_t* q8 = y[i].qs;
        uint8_t m = 1;
        for (int half = 0; half < 2; ++half) {
            const uint8_t* q3 = x[i].qs + 32 * half;
            for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
                for (int part = 0; part < 2; ++part, q8 += 16) {
                    int s = 0;
                    for (int l = 16 * part; l < 16 * part + 16; ++l) {
                        const int v = ((q3[l] >> shift) & 3) - ((x[i].hmask[l] & m) ? 0 : 4);
                        s += v * q8[l - 16 * part];
                    }
                    isum += sc[is++] * s;
                }
            }
        }
        acc += y[i].d * fp16_to_fp32(x[i].d) * static_cast<float>(isum);
    }
    return acc;
}

// Q4_K and Q5_K share the scale/min layout; `value(l)` is element l of the super-block.
template <class Value>
float k4_block_dot(const uint8_t* packed_scales, uint16_t d16, uint16_t dmin16, const BlockQ8_K& y,
                   Value value) {
    int isum = 0, summs = 0;
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        k4_scale_min(j, packed_scales, sc, m);
        int s = 0;
        for (int l = 32 * j; l < 32 * j + 32; ++l) s += value(l) * y.qs[l];
        isum += sc * s;
        summs += m * (y.bsums[2 * j] + y.bsums[2 * j + 1]);
    }
    return y.d * fp16_to_fp32(d16) * static_cast<float>(isum) -
           y.d * fp16_to_fp32(dmin16) * static_cast<float>(summs);
}

float dot_q4_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const uint8_t* qs = x[i].qs;
        acc += k4_block_dot(x[i].scales, x[i].d, x[i].dmin, y[i], [qs](int l) {
            const uint8_t b = qs[(l / 64) * 32 + l % 32];
            return (l % 64) < 32 ? (b & 0xF) : (b >> 4);
        });
    }
    return acc;
}

float dot_q5_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const uint8_t* qs = x[i].qs;
        const uint8_t* qh = x[i].qh;
        acc += k4_block_dot(x[i].scales, x[i].d, x[i].dmin, y[i], [qs, qh](int l) {
            const uint8_t b = qs[(l / 64) * 32 + l % 32];
            const int low = (l % 64) < 32 ? (b & 0xF) : (b >> 4);
            return low | (((qh[l % 32] >> (l / 32)) & 1) << 4);
        });
    }
    return acc;
}

float dot_q6_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ6_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        int8_t q[QK_K];
        const uint8_t* ql = x[i].ql;
        const uint8_t* qh = x[i].qh;
        for (int half = 0; half < 2; ++half, ql += 64, qh += 32) {
            int8_t* o = q + 128 * half;
            for (int l = 0; l < 32; ++l) {
                o[l] = static_cast<int8_t>(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
                o[l + 32] =
                    static_cast<int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
                o[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
                o[l + 96] =
                    static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
            }
        }
        int isum = 0;
        for (int j = 0; j < 16; ++j) {
            int s = 0;
            for (int l = 16 * j; l < 16 * j + 16; ++l) s += q[l] * y[i].qs[l];
            isum += x[i].scales[j] * s;
        }
        acc += y[i].d * fp16_to_fp32(x[i].d) * static_cast<float>(isum);
    }
    return acc;
}

float dot_iq4_nl(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockIQ4_NL*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n / QK; ++i) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            sumi += kIQ4Values[x[i].qs[j] & 0xF] * y[i].qs[j];
            sumi += kIQ4Values[x[i].qs[j] >> 4] * y[i].qs[j + 16];
        }
        acc += static_cast<float>(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
    }
    return acc;
}

float dot_iq4_xs(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockIQ4_XS*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float acc = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        int isum = 0;
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t* qs = x[i].qs + 16 * ib;
            const int8_t* q8 = y[i].qs + 32 * ib;
            int s = 0;
            for (int j = 0; j < 16; ++j)
                s += kIQ4Values[qs[j] & 0xF] * q8[j] + kIQ4Values[qs[j] >> 4] * q8[j + 16];
            isum += iq4xs_scale(x[i], ib) * s;
        }
        acc += y[i].d * fp16_to_fp32(x[i].d) * static_cast<float>(isum);
    }
    return acc;
}

template <float (*Dot)(int64_t, const void*, const void*)>
constexpr Kernels make(DType t, DType act) {
    return Kernels{t, act, Isa::Scalar, Dot, tile_by_rows<Dot>};
}

constexpr Kernels kTable[] = {
    make<dot_f32>(DType::F32, DType::F32),        make<dot_f16>(DType::F16, DType::F32),
    make<dot_bf16>(DType::BF16, DType::F32),      make<dot_q4_0>(DType::Q4_0, DType::Q8_0),
    make<dot_q4_1>(DType::Q4_1, DType::Q8_1),     make<dot_q5_0>(DType::Q5_0, DType::Q8_0),
    make<dot_q5_1>(DType::Q5_1, DType::Q8_1),     make<dot_q8_0>(DType::Q8_0, DType::Q8_0),
    make<dot_q2_k>(DType::Q2_K, DType::Q8_K),     make<dot_q3_k>(DType::Q3_K, DType::Q8_K),
    make<dot_q4_k>(DType::Q4_K, DType::Q8_K),     make<dot_q5_k>(DType::Q5_K, DType::Q8_K),
    make<dot_q6_k>(DType::Q6_K, DType::Q8_K),     make<dot_iq4_nl>(DType::IQ4_NL, DType::Q8_0),
    make<dot_iq4_xs>(DType::IQ4_XS, DType::Q8_K),
};

}  // namespace

const Kernels* scalar_kernels(DType weight) {
    for (const auto& k : kTable)
        if (k.type == weight) return &k;
    return nullptr;
}

}  // namespace tandem::quant
