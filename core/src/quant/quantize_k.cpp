// Reference quantisers of the K-quants (Q4_K, Q5_K, Q6_K). They follow the published ggml
// algorithm: per sub-block, a weighted least-squares search over candidate scales
// (make_qkx2_quants for the types with a min, make_qx_quants for Q6_K), then the sub-block
// scales are themselves quantised to 6 (Q4_K/Q5_K) or 8 (Q6_K) bits and the elements re-rounded
// against the stored scales. Plain float arithmetic in ggml's order, for bit-exact output.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "blocks.h"
#include "dequantize.h"
#include "tandem/quant/fp16.h"

namespace tandem::quant::scalar {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

int clampi(int v, int lo, int hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

// Asymmetric quantisation x ~ scale * L - min_out with L in [0, nmax], weights w. Tries the
// plain min/max scale, then nstep+1 scales (rmin + rdelta * is + nmax) / (max - min), keeping the
// one with the smallest weighted squared error. Returns the scale; *min_out is the (positive)
// offset.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* min_out, uint8_t* Laux, float rmin, float rdelta, int nstep) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::memset(L, 0, static_cast<size_t>(n));
        *min_out = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_err = 0;
    for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = static_cast<uint8_t>(clampi(l, 0, nmax));
        const float diff = scale * L[i] + min - x[i];
        best_err += weights[i] * (diff * diff);
    }
    if (nstep < 1) {
        *min_out = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = static_cast<uint8_t>(l);
            const float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float err = 0;
            for (int i = 0; i < n; ++i) {
                const float diff = this_scale * Laux[i] + this_min - x[i];
                err += weights[i] * (diff * diff);
            }
            if (err < best_err) {
                std::memcpy(L, Laux, static_cast<size_t>(n));
                best_err = err;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *min_out = -min;
    return scale;
}

// Symmetric quantisation x ~ scale * (L - nmax), L - nmax in [-nmax, nmax - 1], weighted by x^2
// (ggml's rmse_type 1); tries 18 scales around -nmax / max.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        std::memset(L, 0, static_cast<size_t>(n));
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                const int l = nearest_int(iscale * x[i]);
                L[i] = static_cast<int8_t>(nmax + clampi(l, -nmax, nmax - 1));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// Shared by Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins. Fills the header
// (d, dmin, scales) and L (0..nmax per element).
void quantize_k4_block(const float* x, int nmax, float rmin, float rdelta, int nstep,
                       uint16_t& d_out, uint16_t& dmin_out, uint8_t* packed_scales, uint8_t* L) {
    float weights[32], mins[8], scales[8];
    uint8_t Laux[32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        const float* xs = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
        scales[j] = make_qkx2_quants(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, rmin,
                                     rdelta, nstep);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    std::memset(packed_scales, 0, 12);
    for (int j = 0; j < 8; ++j) {
        const int ls = std::min(63, nearest_int(inv_scale * scales[j]));
        const int lm = std::min(63, nearest_int(inv_min * mins[j]));
        if (j < 4) {
            packed_scales[j] = static_cast<uint8_t>(ls);
            packed_scales[j + 4] = static_cast<uint8_t>(lm);
        } else {
            packed_scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
            packed_scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
            packed_scales[j] |= static_cast<uint8_t>((lm >> 4) << 6);
        }
    }
    d_out = fp32_to_fp16(max_scale / 63.f);
    dmin_out = fp32_to_fp16(max_min / 63.f);
    // Re-round every element against the scales as stored.
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        k4_scale_min(j, packed_scales, sc, m);
        const float d = fp16_to_fp32(d_out) * sc;
        if (d == 0.f) continue;
        const float dm = fp16_to_fp32(dmin_out) * m;
        for (int ii = 0; ii < 32; ++ii) {
            const int l = nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = static_cast<uint8_t>(clampi(l, 0, nmax));
        }
    }
}

}  // namespace

void quant_q4_k(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ4_K*>(dst);
    uint8_t L[QK_K];
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        quantize_k4_block(x, 15, -1.f, 0.1f, 20, y[i].d, y[i].dmin, y[i].scales, L);
        uint8_t* q = y[i].qs;
        for (int j = 0; j < QK_K; j += 64, q += 32)
            for (int l = 0; l < 32; ++l)
                q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    }
}

void quant_q5_k(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ5_K*>(dst);
    uint8_t L[QK_K];
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        quantize_k4_block(x, 31, -0.5f, 0.1f, 15, y[i].d, y[i].dmin, y[i].scales, L);
        uint8_t* qh = y[i].qh;
        uint8_t* ql = y[i].qs;
        std::memset(qh, 0, QK_K / 8);
        uint8_t m1 = 1, m2 = 2;
        for (int n0 = 0; n0 < QK_K; n0 += 64, ql += 32) {
            for (int j = 0; j < 32; ++j) {
                int l1 = L[n0 + j], l2 = L[n0 + j + 32];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] |= m1;
                }
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] |= m2;
                }
                ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
            }
            m1 = static_cast<uint8_t>(m1 << 2);
            m2 = static_cast<uint8_t>(m2 << 2);
        }
    }
}

void quant_q6_k(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ6_K*>(dst);
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
            scales[ib] = scale;
            if (std::fabs(scale) > max_abs_scale) {
                max_abs_scale = std::fabs(scale);
                max_scale = scale;
            }
        }
        if (max_abs_scale < kGroupMaxEps) {
            std::memset(&y[i], 0, sizeof(BlockQ6_K));
            continue;
        }
        const float iscale = -128.f / max_scale;
        y[i].d = fp32_to_fp16(1 / iscale);
        for (int ib = 0; ib < QK_K / 16; ++ib)
            y[i].scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = fp16_to_fp32(y[i].d) * y[i].scales[j];
            if (d == 0.f) continue;
            for (int ii = 0; ii < 16; ++ii) {
                const int l = nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = static_cast<int8_t>(clampi(l, -32, 31) + 32);
            }
        }
        uint8_t* ql = y[i].ql;
        uint8_t* qh = y[i].qh;
        for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; ++l) {
                const int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
                const int q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
                ql[l] = static_cast<uint8_t>(q1 | (q3 << 4));
                ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
                qh[l] =
                    static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                         ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
            }
        }
    }
}

}  // namespace tandem::quant::scalar
