// AVX2/F16C versions of the plain-type row conversions, which attention and the KV cache run
// per row per token. Same results as the scalar code: F16C converts with round-to-nearest-even
// (NaN stays NaN), bf16 rounding is the same integer arithmetic.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "rows_simd.h"
#include "tandem/quant/fp16.h"

#if defined(__x86_64__)
#include "target_avx2_begin.inc"

namespace tandem::quant::avx2 {

void dequant_f16(const void* src, float* y, int64_t n) {
    const auto* s = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i,
                         _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
    for (; i < n; ++i) y[i] = fp16_to_fp32(s[i]);
}

void dequant_bf16(const void* src, float* y, int64_t n) {
    const auto* s = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i h =
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
        _mm256_storeu_ps(y + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
    }
    for (; i < n; ++i) y[i] = bf16_to_fp32(s[i]);
}

void quant_f16(const float* x, void* dst, int64_t n) {
    auto* d = static_cast<uint16_t*>(dst);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) d[i] = fp32_to_fp16(x[i]);
}

void quant_bf16(const float* x, void* dst, int64_t n) {
    auto* d = static_cast<uint16_t*>(dst);
    int64_t i = 0;
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    for (; i + 8 <= n; i += 8) {
        const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(x + i));
        // Round to nearest even: u + 0x7fff + (bit 16 of u); NaN: keep the top bits, set quiet.
        const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        const __m256i rounded = _mm256_srli_epi32(
            _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd)), 16);
        const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64));
        const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
        const __m256i r = _mm256_blendv_epi8(rounded, quiet, is_nan);
        // 8 x 32-bit (values < 2^16) to 8 x 16-bit.
        const __m256i packed = _mm256_packus_epi32(r, r);
        const __m128i lo = _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), lo);
    }
    for (; i < n; ++i) d[i] = fp32_to_bf16(x[i]);
}

void add_scaled_f16(const void* src, float w, float* acc, int64_t n) {
    const auto* s = static_cast<const uint16_t*>(src);
    const __m256 vw = _mm256_set1_ps(w);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
        _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(vw, v, _mm256_loadu_ps(acc + i)));
    }
    for (; i < n; ++i) acc[i] += w * fp16_to_fp32(s[i]);
}

void add_scaled_f32(const void* src, float w, float* acc, int64_t n) {
    const auto* s = static_cast<const float*>(src);
    const __m256 vw = _mm256_set1_ps(w);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(acc + i,
                         _mm256_fmadd_ps(vw, _mm256_loadu_ps(s + i), _mm256_loadu_ps(acc + i)));
    for (; i < n; ++i) acc[i] += w * s[i];
}

// 8 elements of row type F16 / F32 as floats.
struct F16Row {
    static __m256 load8(const void* r, int64_t i) {
        return _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(r) + i)));
    }
    static float at(const void* r, int64_t i) {
        return fp16_to_fp32(static_cast<const uint16_t*>(r)[i]);
    }
};
struct F32Row {
    static __m256 load8(const void* r, int64_t i) {
        return _mm256_loadu_ps(static_cast<const float*>(r) + i);
    }
    static float at(const void* r, int64_t i) { return static_cast<const float*>(r)[i]; }
};

// Columns of 8 outer, rows inner: the NA accumulators of one column stay in registers while
// every row passes (a row's 8 values are converted once for all NA sums).
template <int NA, class R>
void weighted_rows(const void* rows, size_t stride, int64_t n_rows, const float* w,
                   int64_t w_stride, float* out, int64_t n) {
    const auto* base = static_cast<const uint8_t*>(rows);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 acc[NA];
        for (int k = 0; k < NA; ++k) acc[k] = _mm256_setzero_ps();
        for (int64_t j = 0; j < n_rows; ++j) {
            const __m256 v = R::load8(base + static_cast<size_t>(j) * stride, i);
            for (int k = 0; k < NA; ++k)
                acc[k] = _mm256_fmadd_ps(_mm256_broadcast_ss(w + k * w_stride + j), v, acc[k]);
        }
        for (int k = 0; k < NA; ++k) _mm256_storeu_ps(out + k * n + i, acc[k]);
    }
    for (; i < n; ++i)
        for (int k = 0; k < NA; ++k) {
            float s = 0;
            for (int64_t j = 0; j < n_rows; ++j)
                s += w[k * w_stride + j] * R::at(base + static_cast<size_t>(j) * stride, i);
            out[k * n + i] = s;
        }
}

template <class R>
void weighted_rows_any(const void* rows, size_t stride, int64_t n_rows, const float* w,
                       int64_t w_stride, int n_acc, float* out, int64_t n) {
    // At most 4 sums per pass: 4 accumulators + the row + broadcasts fit the 16 registers.
    for (int k0 = 0; k0 < n_acc; k0 += 4) {
        const float* wk = w + k0 * w_stride;
        float* ok = out + k0 * n;
        switch (std::min(4, n_acc - k0)) {
            case 1:
                weighted_rows<1, R>(rows, stride, n_rows, wk, w_stride, ok, n);
                break;
            case 2:
                weighted_rows<2, R>(rows, stride, n_rows, wk, w_stride, ok, n);
                break;
            case 3:
                weighted_rows<3, R>(rows, stride, n_rows, wk, w_stride, ok, n);
                break;
            default:
                weighted_rows<4, R>(rows, stride, n_rows, wk, w_stride, ok, n);
                break;
        }
    }
}

void weighted_rows_f16(const void* rows, size_t row_stride, int64_t n_rows, const float* w,
                       int64_t w_stride, int n_acc, float* out, int64_t n) {
    weighted_rows_any<F16Row>(rows, row_stride, n_rows, w, w_stride, n_acc, out, n);
}
void weighted_rows_f32(const void* rows, size_t row_stride, int64_t n_rows, const float* w,
                       int64_t w_stride, int n_acc, float* out, int64_t n) {
    weighted_rows_any<F32Row>(rows, row_stride, n_rows, w, w_stride, n_acc, out, n);
}

}  // namespace tandem::quant::avx2
#include "target_end.inc"

#else
#include "dequantize.h"
namespace tandem::quant::avx2 {
// Not reached off x86 (isa_supported(Avx2) is false); kept so the dispatch links everywhere.
void dequant_f16(const void* s, float* y, int64_t n) {
    scalar::dequant_f16(s, y, n);
}
void dequant_bf16(const void* s, float* y, int64_t n) {
    scalar::dequant_bf16(s, y, n);
}
void quant_f16(const float* x, void* d, int64_t n) {
    scalar::quant_f16(x, d, n);
}
void quant_bf16(const float* x, void* d, int64_t n) {
    scalar::quant_bf16(x, d, n);
}
void add_scaled_f16(const void* src, float w, float* acc, int64_t n) {
    const auto* s = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) acc[i] += w * fp16_to_fp32(s[i]);
}
void add_scaled_f32(const void* src, float w, float* acc, int64_t n) {
    const auto* s = static_cast<const float*>(src);
    for (int64_t i = 0; i < n; ++i) acc[i] += w * s[i];
}
void weighted_rows_f16(const void*, size_t, int64_t, const float*, int64_t, int, float*, int64_t) {}
void weighted_rows_f32(const void*, size_t, int64_t, const float*, int64_t, int, float*, int64_t) {}
}  // namespace tandem::quant::avx2
#endif
