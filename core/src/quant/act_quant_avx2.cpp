// AVX2 activation quantisers, byte for byte those of the scalar reference (ggml's): the same
// float products (no FMA), roundf's half-away-from-zero for q8_0/q8_1 and round-half-even for
// q8_K, the same first-largest-magnitude choice for q8_K's sign.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "act_quant.h"
#include "blocks.h"
#include "tandem/quant/fp16.h"

#if defined(__x86_64__)
#include "target_avx2_begin.inc"

namespace tandem::quant::avx2 {
namespace {

inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

inline __m256 abs_ps(__m256 v) {
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

// roundf: round half away from zero. t = trunc(v) is exact and so is v - t.
inline __m256i round_away(__m256 v) {
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = abs_ps(_mm256_sub_ps(v, t));
    const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f)));
    return _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(up, one)));
}

// Four vectors of 8 int32 (each in [-127, 127]) to 32 int8, in order.
inline void store_i8x32(int8_t* dst, __m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b);  // a0-3 b0-3 | a4-7 b4-7 (i16)
    const __m256i cd = _mm256_packs_epi32(c, d);
    const __m256i abcd = _mm256_packs_epi16(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 ...
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_permutevar8x32_epi32(abcd, order));
}

// One 32-element block as q8_0: d = amax / 127 (float, before its f16 rounding); returns the
// sum of the quantised values.
inline int quant_block_q8_0(const float* x, float& d, int8_t* qs) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        amax = _mm256_max_ps(amax, abs_ps(v[k]));
    }
    d = hmax(amax) / 127.f;
    const float id = d != 0.f ? 1.0f / d : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) q[k] = round_away(_mm256_mul_ps(v[k], vid));
    store_i8x32(qs, q[0], q[1], q[2], q[3]);
    return hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
}

}  // namespace

void quant_q8_0(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_0*>(dst);
    for (int64_t i = 0; i < n / QK; ++i) {
        float d;
        quant_block_q8_0(x + i * QK, d, y[i].qs);
        y[i].d = fp32_to_fp16(d);
    }
}

void quant_q8_1(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_1*>(dst);
    for (int64_t i = 0; i < n / QK; ++i) {
        float d;
        const int sum = quant_block_q8_0(x + i * QK, d, y[i].qs);
        y[i].d = fp32_to_fp16(d);
        y[i].s = fp32_to_fp16(static_cast<float>(sum) * d);
    }
}

void quant_q8_k(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_K*>(dst);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        __m256 amax = _mm256_setzero_ps();
        for (int k = 0; k < QK_K; k += 8)
            amax = _mm256_max_ps(amax, abs_ps(_mm256_loadu_ps(x + k)));
        const float am = hmax(amax);
        if (am == 0.f) {
            std::memset(&y[i], 0, sizeof(BlockQ8_K));
            continue;
        }
        // The first element of that magnitude gives the sign (as the reference's strict >).
        float max = 0.f;
        const __m256 vam = _mm256_set1_ps(am);
        for (int k = 0; k < QK_K; k += 8) {
            const int hit =
                _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(x + k)), vam, _CMP_EQ_OQ));
            if (hit) {
                max = x[k + __builtin_ctz(static_cast<unsigned>(hit))];
                break;
            }
        }
        const float iscale = -127.f / max;
        const __m256 vis = _mm256_set1_ps(iscale);
        const __m256i cap = _mm256_set1_epi32(127);
        for (int k = 0; k < QK_K; k += 32) {
            __m256i q[4];
            for (int j = 0; j < 4; ++j)  // round half to even (MXCSR default), as nearest_int
                q[j] = _mm256_min_epi32(
                    _mm256_cvtps_epi32(_mm256_mul_ps(vis, _mm256_loadu_ps(x + k + 8 * j))), cap);
            store_i8x32(y[i].qs + k, q[0], q[1], q[2], q[3]);
            y[i].bsums[k / 16] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[0], q[1])));
            y[i].bsums[k / 16 + 1] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[2], q[3])));
        }
        y[i].d = 1 / iscale;
    }
}

}  // namespace tandem::quant::avx2
#include "target_end.inc"

#else
#include "dequantize.h"
namespace tandem::quant::avx2 {
// Not reached off x86 (isa_supported(Avx2) is false); kept so the table links everywhere.
void quant_q8_0(const float* x, void* dst, int64_t n) {
    scalar::quant_q8_0(x, dst, n);
}
void quant_q8_1(const float* x, void* dst, int64_t n) {
    scalar::quant_q8_1(x, dst, n);
}
void quant_q8_k(const float* x, void* dst, int64_t n) {
    scalar::quant_q8_k(x, dst, n);
}
}  // namespace tandem::quant::avx2
#endif
