// AVX-512 row helpers of attention. weighted_rows_sum for F16 / F32 rows (the V pass): 64 columns
// x 4 sums per pass, 16 accumulators, so every row is loaded and converted once per 64 columns
// and the FMAs of one row are 16 independent chains (the AVX2 version has 4, and waits on their
// latency). exp_shifted_sum: softmax's exponentials 16 at a time.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "rows_simd.h"

#if defined(__x86_64__)
#include "target_avx512_begin.inc"

namespace tandem::quant::avx512 {
namespace {

struct F16Row16 {
    static __m512 load16(const void* r, int64_t i) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(r) + i)));
    }
};
struct F32Row16 {
    static __m512 load16(const void* r, int64_t i) {
        return _mm512_loadu_ps(static_cast<const float*>(r) + i);
    }
};

// Columns [i, i + 16 * NC) of NA sums.
template <int NA, int NC, class R>
void columns(const uint8_t* base, size_t stride, int64_t n_rows, const float* w, int64_t w_stride,
             float* out, int64_t n, int64_t i) {
    __m512 acc[NA][NC];
#pragma GCC unroll 16
    for (int k = 0; k < NA; ++k)
#pragma GCC unroll 16
        for (int c = 0; c < NC; ++c) acc[k][c] = _mm512_setzero_ps();
    for (int64_t j = 0; j < n_rows; ++j) {
        const uint8_t* row = base + static_cast<size_t>(j) * stride;
        __m512 v[NC];
#pragma GCC unroll 16
        for (int c = 0; c < NC; ++c) v[c] = R::load16(row, i + 16 * c);
#pragma GCC unroll 16
        for (int k = 0; k < NA; ++k) {
            const __m512 wk = _mm512_set1_ps(w[k * w_stride + j]);
#pragma GCC unroll 16
            for (int c = 0; c < NC; ++c) acc[k][c] = _mm512_fmadd_ps(wk, v[c], acc[k][c]);
        }
    }
#pragma GCC unroll 16
    for (int k = 0; k < NA; ++k)
#pragma GCC unroll 16
        for (int c = 0; c < NC; ++c) _mm512_storeu_ps(out + k * n + i + 16 * c, acc[k][c]);
}

// n is a multiple of 16 (rows.cpp sends other lengths to the AVX2 code).
template <int NA, class R>
void sums(const uint8_t* base, size_t stride, int64_t n_rows, const float* w, int64_t w_stride,
          float* out, int64_t n) {
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) columns<NA, 4, R>(base, stride, n_rows, w, w_stride, out, n, i);
    for (; i + 16 <= n; i += 16) columns<NA, 1, R>(base, stride, n_rows, w, w_stride, out, n, i);
}

template <class R>
void weighted(const void* rows, size_t stride, int64_t n_rows, const float* w, int64_t w_stride,
              int n_acc, float* out, int64_t n) {
    const auto* base = static_cast<const uint8_t*>(rows);
    for (int k0 = 0; k0 < n_acc; k0 += 4) {
        const float* wk = w + k0 * w_stride;
        float* ok = out + k0 * n;
        switch (std::min(4, n_acc - k0)) {
            case 1:
                sums<1, R>(base, stride, n_rows, wk, w_stride, ok, n);
                break;
            case 2:
                sums<2, R>(base, stride, n_rows, wk, w_stride, ok, n);
                break;
            case 3:
                sums<3, R>(base, stride, n_rows, wk, w_stride, ok, n);
                break;
            default:
                sums<4, R>(base, stride, n_rows, wk, w_stride, ok, n);
                break;
        }
    }
}

// exp(x) for x <= 0 (as softmax has after subtracting the maximum; larger x work up to ~88):
// x = k ln2 + r with |r| <= ln2 / 2, e^r by the Cephes expf polynomial, times 2^k by vscalefps
// (which also gives the gradual underflow to 0 below -87).
inline __m512 exp512(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));  // exp is 0 in f32 well before this
    const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // r = x - k ln2, ln2 in two parts so that k * ln2_hi is exact.
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, k);
}

}  // namespace

float exp_shifted_sum(float* x, int64_t n, float shift) {
    const __m512 s = _mm512_set1_ps(shift);
    __m512 sum = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        const __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + j), s));
        _mm512_storeu_ps(x + j, e);
        sum = _mm512_add_ps(sum, e);
    }
    if (j < n) {
        const __mmask16 m = static_cast<__mmask16>((1u << (n - j)) - 1);
        const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), s));
        _mm512_mask_storeu_ps(x + j, m, e);
        sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(m, e));
    }
    return _mm512_reduce_add_ps(sum);
}

void weighted_rows_f16(const void* rows, size_t row_stride, int64_t n_rows, const float* w,
                       int64_t w_stride, int n_acc, float* out, int64_t n) {
    weighted<F16Row16>(rows, row_stride, n_rows, w, w_stride, n_acc, out, n);
}
void weighted_rows_f32(const void* rows, size_t row_stride, int64_t n_rows, const float* w,
                       int64_t w_stride, int n_acc, float* out, int64_t n) {
    weighted<F32Row16>(rows, row_stride, n_rows, w, w_stride, n_acc, out, n);
}

}  // namespace tandem::quant::avx512
#include "target_avx512_end.inc"

#else
namespace tandem::quant::avx512 {
void weighted_rows_f16(const void*, size_t, int64_t, const float*, int64_t, int, float*, int64_t) {}
void weighted_rows_f32(const void*, size_t, int64_t, const float*, int64_t, int, float*, int64_t) {}
}  // namespace tandem::quant::avx512
#endif
