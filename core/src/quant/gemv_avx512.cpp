// Decode matvec (one token) of Q4_0 over q8_0 activations, AVX-512 VNNI level.
//
// The row kernels (kernels_x86.inc) make Q4_0 signed (q - 8) and use the sign trick for the
// unsigned x signed byte product: three extra ops per block, which made Q4_0 decode compute
// bound (11.9 GB/s per core from cache, against 27 for Q8_0). Here the nibbles stay unsigned
// and the offset comes off through the activation block sums that Activations::prepare
// computes once per step: sum_b s_b * (q_u . a - 8 * sum(a)) with s_b = d_w * d_a, the first
// term per block (vpdpbusd, convert, FMA), the second per 8 blocks as one FMA over the sums.
// The weights are read as they lie in the file mapping (no repack: decode reads each row once).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "blocks.h"
#include "kernels.h"

#if defined(__x86_64__)
#include "target_avx512_begin.inc"

namespace tandem::quant {
namespace gemv512 {
namespace {

// The 32 weights of a block as unsigned bytes 0..15 in element order (low nibbles, then high).
inline __m256i nibbles(const uint8_t* qs) {
    const __m256i both =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    const __m256i shifted = _mm256_srlv_epi64(both, _mm256_setr_epi64x(0, 0, 4, 4));
    return _mm256_and_si256(shifted, _mm256_set1_epi8(0x0F));
}

// The f16 scales of 8 consecutive Q4_0 blocks (18 bytes apart) as f32. The gather reads 4 bytes
// at each block's start: its scale and the first bytes of its own quants.
inline __m256 scales8(const BlockQ4_0* b) {
    const __m256i at = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                          _mm256_set1_epi32(int(sizeof(BlockQ4_0))));
    const __m256i words = _mm256_i32gather_epi32(reinterpret_cast<const int*>(b), at, 1);
    return _mm256_cvtph_ps(_mm256_cvtepi32_epi16(words));
}

inline float hsum(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 h = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

void gemv_q4_0(const uint8_t* w, size_t w_stride, int64_t n_in, int64_t row_begin, int64_t row_end,
               const Activations& x, float* y) {
    const int64_t nb = n_in / QK;
    const auto* a = static_cast<const BlockQ8_0*>(x.row(0));
    const float* da = x.block_scales();  // [nb]
    const int32_t* sa = x.block_sums();  // [nb]
    for (int64_t r = row_begin; r < row_end; ++r) {
        const auto* b = reinterpret_cast<const BlockQ4_0*>(w + static_cast<size_t>(r) * w_stride);
        // Four product accumulators take turns so consecutive FMAs do not wait on each other.
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                         _mm256_setzero_ps()};
        __m256 off = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 8 <= nb; i += 8) {
            const __m256 s8 = _mm256_mul_ps(scales8(b + i), _mm256_loadu_ps(da + i));
            off = _mm256_fmadd_ps(
                s8,
                _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sa + i))),
                off);
            alignas(32) float s[8];
            _mm256_store_ps(s, s8);
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) {
                const __m256i q = nibbles(b[i + k].qs);
                const __m256i p = _mm256_dpbusd_epi32(
                    _mm256_setzero_si256(), q,
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i + k].qs)));
                acc[k & 3] =
                    _mm256_fmadd_ps(_mm256_broadcast_ss(&s[k]), _mm256_cvtepi32_ps(p), acc[k & 3]);
            }
        }
        float tail_off = 0.f;
        for (; i < nb; ++i) {
            const float s = _cvtsh_ss(b[i].d) * da[i];
            const __m256i p =
                _mm256_dpbusd_epi32(_mm256_setzero_si256(), nibbles(b[i].qs),
                                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs)));
            acc[0] = _mm256_fmadd_ps(_mm256_set1_ps(s), _mm256_cvtepi32_ps(p), acc[0]);
            tail_off += s * float(sa[i]);
        }
        const __m256 sum =
            _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        y[r] = hsum(sum) - 8.f * (hsum(off) + tail_off);
    }
}

}  // namespace
}  // namespace gemv512

GemvFn avx512_gemv(DType weight) {
    static const bool on = [] {
        const char* env = std::getenv("TANDEM_QUANT_GEMV");
        return !env || std::string(env) != "0";
    }();
    if (!on) return nullptr;
    return weight == DType::Q4_0 ? gemv512::gemv_q4_0 : nullptr;
}

}  // namespace tandem::quant
#include "target_avx512_end.inc"

#else
namespace tandem::quant {
GemvFn avx512_gemv(DType) {
    return nullptr;
}
}  // namespace tandem::quant
#endif
