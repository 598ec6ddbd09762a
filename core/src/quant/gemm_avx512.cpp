// Prefill GEMM for AVX-512 VNNI. Weight rows go in panels of kGemmRows (16), each repacked once
// per call into a row-interleaved layout: one 512-bit vector holds 4 consecutive weights of each
// of the 16 rows as unsigned bytes (lane r = row r). A vpdpbusd of such a vector with 4
// activation bytes of one token broadcast to every lane adds those 4 products to each row's sum,
// so each weight load serves a tile of 8 tokens, each activation load serves 16 rows, and the 16
// row sums stay in separate lanes (no horizontal sums). Signed weights are stored with an offset
// (q + 8 for Q4_0, q + 128 for Q8_0, ...) that comes off again with the activation block sums.
//
// The repack gathers straight from the blocks as they lie in the file mapping (no copy of the
// weights is kept: the planner's weights = file bytes still holds). It costs about what the
// products of 8 tokens do, yet from 4 tokens on the GEMM already takes half the row kernels' time
// (2048 x 2048 Q4_0, one thread: 0.26 ms against 0.55), hence kGemmMinTokens. The panel lives in
// a per-thread buffer (n_in / 32 * 576 bytes for the 32-element types: 36 KiB at n_in 2048, L2
// at 8192).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "blocks.h"
#include "kernels.h"
#include "tandem/common/error.h"

#if defined(__x86_64__)
#include "target_avx512_begin.inc"

namespace tandem::quant {
namespace gemm512 {
namespace {

constexpr int kTok = kMaxTokenTile;  // tokens per tile: 8 int + 8 (K: 16) float accumulators

// Per-thread panel memory, grown as needed; 64-byte aligned for whole-vector loads.
void* panel_memory(size_t bytes) {
    struct Buffer {
        void* data = nullptr;
        size_t capacity = 0;
        ~Buffer() { std::free(data); }
    };
    thread_local Buffer b;
    if (bytes > b.capacity) {
        std::free(b.data);
        b.capacity = (bytes + 63) / 64 * 64;
        b.data = std::aligned_alloc(64, b.capacity);
        if (!b.data) {
            b.capacity = 0;
            throw Error("quant: cannot allocate " + std::to_string(bytes) +
                        " bytes for a GEMM weight panel");
        }
    }
    return b.data;
}

inline __m512i bcast32(const void* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}
inline __m512i set8(uint32_t v) {
    return _mm512_set1_epi32(static_cast<int32_t>(v));
}
inline __m512i and8(__m512i v, uint32_t m) {
    return _mm512_and_si512(v, set8(m));
}

// The 16 rows of one panel: at(offset) gathers the 4 bytes at `offset` of every present row
// (lane r = row r; absent rows read as 0, so they add nothing).
struct Rows {
    const uint8_t* base;
    __m512i idx;  // r * row stride
    __mmask16 mask;
    __m512i at(size_t offset) const {
        return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mask, idx, base + offset, 1);
    }
};
inline Rows panel_rows(const uint8_t* w, size_t w_stride, int n_rows) {
    const __m512i r = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return {w, _mm512_mullo_epi32(r, _mm512_set1_epi32(static_cast<int32_t>(w_stride))),
            static_cast<__mmask16>((1u << n_rows) - 1)};
}

// f16 in the low / high 16 bits of each lane, as f32.
inline __m512 f16_lo(__m512i v) {
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
}
inline __m512 f16_hi(__m512i v) {
    return f16_lo(_mm512_srli_epi32(v, 16));
}

// ---- 32-element blocks with q8_0 activations (Q4_0 Q5_0 Q8_0 IQ4_NL) -------------------------

// One block of a panel: q[k] = weights 4k..4k+3 of each row, unsigned (q + offset); d = scales.
struct Panel32 {
    __m512i q[8];
    __m512 d;
};
static_assert(sizeof(Panel32) == 576);

// Packers: block b (of block_bytes) of the panel's rows.
void pack_q4_0(const Rows& r, int64_t b, Panel32& p) {
    const size_t o = static_cast<size_t>(b) * sizeof(BlockQ4_0);
    for (int m = 0; m < 4; ++m) {
        // Low nibbles are elements 4m.., high ones 16 + 4m.. (unsigned 0..15 = q + 8).
        const __m512i v = r.at(o + 2 + 4 * m);
        p.q[m] = and8(v, 0x0F0F0F0F);
        p.q[m + 4] = and8(_mm512_srli_epi32(v, 4), 0x0F0F0F0F);
    }
    p.d = f16_lo(r.at(o));
}
void pack_iq4_nl(const Rows& r, int64_t b, Panel32& p) {
    // Table values + 128 as unsigned bytes (1..241).
    alignas(16) uint8_t table[16];
    for (int i = 0; i < 16; ++i) table[i] = static_cast<uint8_t>(kIQ4Values[i] + 128);
    const __m512i tab = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<__m128i*>(table)));
    pack_q4_0(r, b, p);  // same block layout; the nibbles then index the table
    for (auto& q : p.q) q = _mm512_shuffle_epi8(tab, q);
}
void pack_q8_0(const Rows& r, int64_t b, Panel32& p) {
    const size_t o = static_cast<size_t>(b) * sizeof(BlockQ8_0);
    for (int k = 0; k < 8; ++k) p.q[k] = _mm512_xor_si512(r.at(o + 2 + 4 * k), set8(0x80808080));
    p.d = f16_lo(r.at(o));
}
// Bit 4 of byte i = bit i of h (i < 4), the other bits 0.
inline __m512i spread4_bit4(__m512i h) {
    const __m512i b0 = _mm512_slli_epi32(and8(h, 1), 4), b1 = _mm512_slli_epi32(and8(h, 2), 11);
    const __m512i b2 = _mm512_slli_epi32(and8(h, 4), 18), b3 = _mm512_slli_epi32(and8(h, 8), 25);
    return _mm512_or_si512(_mm512_or_si512(b0, b1), _mm512_or_si512(b2, b3));
}
void pack_q5_0(const Rows& r, int64_t b, Panel32& p) {
    const size_t o = static_cast<size_t>(b) * sizeof(BlockQ5_0);
    const __m512i qh = r.at(o + 2);  // bit j: fifth bit of element j
    for (int m = 0; m < 4; ++m) {
        const __m512i v = r.at(o + 6 + 4 * m);
        const __m512i lo = and8(v, 0x0F0F0F0F), hi = and8(_mm512_srli_epi32(v, 4), 0x0F0F0F0F);
        p.q[m] = _mm512_or_si512(lo, spread4_bit4(_mm512_srli_epi32(qh, 4 * m)));
        p.q[m + 4] = _mm512_or_si512(hi, spread4_bit4(_mm512_srli_epi32(qh, 16 + 4 * m)));
    }
    p.d = f16_lo(r.at(o));
}

// Tile: T tokens starting at t0 against a packed panel of nb blocks. out: T rows of 16 lanes.
template <int T>
void tile32(const Panel32* p, int64_t nb, const BlockQ8_0* a, const float* dy, const int32_t* sums,
            int offset, float* y, int64_t y_stride, __mmask16 mask) {
    __m512 acc[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        // sum (q + offset) * a - offset * sum(a) = sum q * a.
        __m512i isum[T];
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) isum[t] = _mm512_set1_epi32(-offset * sums[t * nb + b]);
#pragma GCC unroll 16
        for (int k = 0; k < 8; ++k) {
            const __m512i wq = _mm512_load_si512(&p[b].q[k]);
#pragma GCC unroll 16
            for (int t = 0; t < T; ++t)
                isum[t] = _mm512_dpbusd_epi32(isum[t], wq, bcast32(a[t * nb + b].qs + 4 * k));
        }
        const __m512 d = p[b].d;
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t)
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]),
                                     _mm512_mul_ps(d, _mm512_set1_ps(dy[t * nb + b])), acc[t]);
    }
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * y_stride, mask, acc[t]);
}

using Tile32 = void (*)(const Panel32*, int64_t, const BlockQ8_0*, const float*, const int32_t*,
                        int, float*, int64_t, __mmask16);
constexpr Tile32 kTiles32[kTok + 1] = {nullptr,   tile32<1>, tile32<2>, tile32<3>, tile32<4>,
                                       tile32<5>, tile32<6>, tile32<7>, tile32<8>};

template <void (*pack)(const Rows&, int64_t, Panel32&), int kOffset>
void gemm32(const uint8_t* w, size_t w_stride, int64_t n_in, int64_t row_begin, int64_t row_end,
            const Activations& x, float* y, int64_t y_stride) {
    const int64_t nb = n_in / QK, n_tok = x.n_tokens();
    auto* panel = static_cast<Panel32*>(panel_memory(static_cast<size_t>(nb) * sizeof(Panel32)));
    const auto* acts = static_cast<const BlockQ8_0*>(x.row(0));
    const float* dy = x.block_scales();
    const int32_t* sums = x.block_sums();
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kGemmRows) {
        const int nr = static_cast<int>(std::min<int64_t>(kGemmRows, row_end - r0));
        const Rows rows = panel_rows(w + static_cast<size_t>(r0) * w_stride, w_stride, nr);
        for (int64_t b = 0; b < nb; ++b) pack(rows, b, panel[b]);
        for (int64_t t0 = 0; t0 < n_tok; t0 += kTok) {
            const int nt = static_cast<int>(std::min<int64_t>(kTok, n_tok - t0));
            kTiles32[nt](panel, nb, acts + t0 * nb, dy + t0 * nb, sums + t0 * nb, kOffset,
                         y + t0 * y_stride + r0, y_stride, rows.mask);
        }
    }
}

// ---- K-quants with q8_K activations (Q4_K Q5_K Q6_K) ------------------------------------------

// One super-block of a panel: q[v] = weights 4v..4v+3 of each row (unsigned); dsc[j] = d * scale
// of sub-block j; corr[k] . (bsums[2k], bsums[2k+1]) summed over k, times corr_scale, is the
// per-row correction (Q4_K/Q5_K: the mins, -dmin * sum m_j * bsum_j; Q6_K: the -32 offset).
template <int NSub>
struct PanelK {
    __m512i q[64];
    __m512 dsc[NSub];
    __m512i corr[8];  // int16 pairs
    __m512 corr_scale;
};

// Scales and mins of a Q4_K/Q5_K super-block (bytes 4..15) for the 16 rows.
void pack_k4_scales(const Rows& r, size_t o, PanelK<8>& p) {
    const __m512i a = r.at(o + 4), b = r.at(o + 8), c = r.at(o + 12), dd = r.at(o);
    // As k4_scales_mins, per lane: bytes of s0/s1 are scales 0..3/4..7, of m0/m1 the mins.
    const __m512i s0 = and8(a, 0x3f3f3f3f), m0 = and8(b, 0x3f3f3f3f);
    const __m512i s1 = _mm512_or_si512(
        and8(c, 0x0f0f0f0f), _mm512_slli_epi32(and8(_mm512_srli_epi32(a, 6), 0x03030303), 4));
    const __m512i m1 =
        _mm512_or_si512(and8(_mm512_srli_epi32(c, 4), 0x0f0f0f0f),
                        _mm512_slli_epi32(and8(_mm512_srli_epi32(b, 6), 0x03030303), 4));
    const __m512 d = f16_lo(dd), dmin = f16_hi(dd);
    for (int j = 0; j < 8; ++j) {
        const int sh = 8 * (j % 4);
        const __m512i sc = and8(_mm512_srli_epi32(j < 4 ? s0 : s1, sh), 0xFF);
        const __m512i mn = and8(_mm512_srli_epi32(j < 4 ? m0 : m1, sh), 0xFF);
        p.dsc[j] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc));
        // Both bsums of sub-block j take its min.
        p.corr[j] = _mm512_or_si512(mn, _mm512_slli_epi32(mn, 16));
    }
    p.corr_scale = _mm512_sub_ps(_mm512_setzero_ps(), dmin);
}
void pack_q4_k(const Rows& r, int64_t i, PanelK<8>& p) {
    const size_t o = static_cast<size_t>(i) * sizeof(BlockQ4_K);
    for (int c = 0; c < 4; ++c)
        for (int m = 0; m < 8; ++m) {
            // Bytes 32c..32c+31: low nibbles elements 64c + l, high ones 64c + 32 + l.
            const __m512i v = r.at(o + 16 + 32 * c + 4 * m);
            p.q[16 * c + m] = and8(v, 0x0F0F0F0F);
            p.q[16 * c + 8 + m] = and8(_mm512_srli_epi32(v, 4), 0x0F0F0F0F);
        }
    pack_k4_scales(r, o, p);
}
void pack_q5_k(const Rows& r, int64_t i, PanelK<8>& p) {
    const size_t o = static_cast<size_t>(i) * sizeof(BlockQ5_K);
    for (int m = 0; m < 8; ++m) {
        const __m512i h = r.at(o + 16 + 4 * m);  // bit j of qh[l]: fifth bit of sub-block j
        for (int c = 0; c < 4; ++c) {
            const __m512i v = r.at(o + 48 + 32 * c + 4 * m);
            const __m512i h_lo =
                _mm512_slli_epi32(and8(_mm512_srli_epi32(h, 2 * c), 0x01010101), 4);
            const __m512i h_hi =
                _mm512_slli_epi32(and8(_mm512_srli_epi32(h, 2 * c + 1), 0x01010101), 4);
            p.q[16 * c + m] = _mm512_or_si512(and8(v, 0x0F0F0F0F), h_lo);
            p.q[16 * c + 8 + m] = _mm512_or_si512(and8(_mm512_srli_epi32(v, 4), 0x0F0F0F0F), h_hi);
        }
    }
    pack_k4_scales(r, o, p);
}
// Bits s, s+1 of each byte of h as bits 4, 5 (Q6_K's high bits).
inline __m512i q6_high(__m512i h, int s) {
    return _mm512_slli_epi32(and8(_mm512_srli_epi32(h, static_cast<unsigned>(s)), 0x03030303), 4);
}
void pack_q6_k(const Rows& r, int64_t i, PanelK<16>& p) {
    const size_t o = static_cast<size_t>(i) * sizeof(BlockQ6_K);
    for (int h = 0; h < 2; ++h)
        for (int m = 0; m < 8; ++m) {
            // Elements 128h + l + {0, 32, 64, 96} for l = 4m..4m+3 (ggml's Q6_K order).
            const __m512i l0 = r.at(o + 64 * h + 4 * m), l1 = r.at(o + 64 * h + 32 + 4 * m);
            const __m512i hb = r.at(o + 128 + 32 * h + 4 * m);
            p.q[32 * h + m] = _mm512_or_si512(and8(l0, 0x0F0F0F0F), q6_high(hb, 0));
            p.q[32 * h + 8 + m] = _mm512_or_si512(and8(l1, 0x0F0F0F0F), q6_high(hb, 2));
            p.q[32 * h + 16 + m] =
                _mm512_or_si512(and8(_mm512_srli_epi32(l0, 4), 0x0F0F0F0F), q6_high(hb, 4));
            p.q[32 * h + 24 + m] =
                _mm512_or_si512(and8(_mm512_srli_epi32(l1, 4), 0x0F0F0F0F), q6_high(hb, 6));
        }
    // Bytes 206..209: scales 14, 15 and d (reading at 208 would pass the block's end).
    const __m512 d = f16_hi(r.at(o + 206));
    __m512i sc[16];
    for (int v = 0; v < 4; ++v) {
        const __m512i s4 = r.at(o + 192 + 4 * v);
        for (int k = 0; k < 4; ++k)  // sign-extend byte k
            sc[4 * v + k] = _mm512_srai_epi32(_mm512_slli_epi32(s4, 24 - 8 * k), 24);
    }
    for (int j = 0; j < 16; ++j) p.dsc[j] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc[j]));
    for (int k = 0; k < 8; ++k)
        p.corr[k] = _mm512_or_si512(and8(sc[2 * k], 0xFFFF), _mm512_slli_epi32(sc[2 * k + 1], 16));
    p.corr_scale = _mm512_mul_ps(d, _mm512_set1_ps(-32.0f));
}

template <int T, int NSub>
void tile_k(const PanelK<NSub>* p, int64_t nsb, const BlockQ8_K* a, float* y, int64_t y_stride,
            __mmask16 mask) {
    constexpr int kVecs = 64 / NSub;     // weight vectors per sub-block
    constexpr int kElems = QK_K / NSub;  // elements per sub-block
    __m512 acc[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nsb; ++i) {
        const PanelK<NSub>& P = p[i];
        __m512 sb[T];  // this super-block's sum per token, before the activation scale
        {
            __m512i c[T];
#pragma GCC unroll 16
            for (int t = 0; t < T; ++t) c[t] = _mm512_setzero_si512();
#pragma GCC unroll 16
            for (int k = 0; k < 8; ++k) {
                const __m512i ck = _mm512_load_si512(&P.corr[k]);
#pragma GCC unroll 16
                for (int t = 0; t < T; ++t)
                    c[t] = _mm512_dpwssd_epi32(c[t], ck, bcast32(a[t * nsb + i].bsums + 2 * k));
            }
#pragma GCC unroll 16
            for (int t = 0; t < T; ++t)
                sb[t] = _mm512_mul_ps(_mm512_cvtepi32_ps(c[t]), P.corr_scale);
        }
#pragma GCC unroll 16
        for (int j = 0; j < NSub; ++j) {
            __m512i isum[T];
#pragma GCC unroll 16
            for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
#pragma GCC unroll 16
            for (int k = 0; k < kVecs; ++k) {
                const __m512i wq = _mm512_load_si512(&P.q[j * kVecs + k]);
#pragma GCC unroll 16
                for (int t = 0; t < T; ++t)
                    isum[t] = _mm512_dpbusd_epi32(isum[t], wq,
                                                  bcast32(a[t * nsb + i].qs + j * kElems + 4 * k));
            }
            const __m512 dsc = P.dsc[j];
#pragma GCC unroll 16
            for (int t = 0; t < T; ++t)
                sb[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), dsc, sb[t]);
        }
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t)
            acc[t] = _mm512_fmadd_ps(sb[t], _mm512_set1_ps(a[t * nsb + i].d), acc[t]);
    }
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * y_stride, mask, acc[t]);
}

template <int NSub>
using TileK = void (*)(const PanelK<NSub>*, int64_t, const BlockQ8_K*, float*, int64_t, __mmask16);
template <int NSub>
constexpr TileK<NSub> kTilesK[kTok + 1] = {nullptr,         tile_k<1, NSub>, tile_k<2, NSub>,
                                           tile_k<3, NSub>, tile_k<4, NSub>, tile_k<5, NSub>,
                                           tile_k<6, NSub>, tile_k<7, NSub>, tile_k<8, NSub>};

template <int NSub, void (*pack)(const Rows&, int64_t, PanelK<NSub>&)>
void gemm_k(const uint8_t* w, size_t w_stride, int64_t n_in, int64_t row_begin, int64_t row_end,
            const Activations& x, float* y, int64_t y_stride) {
    const int64_t nsb = n_in / QK_K, n_tok = x.n_tokens();
    auto* panel =
        static_cast<PanelK<NSub>*>(panel_memory(static_cast<size_t>(nsb) * sizeof(PanelK<NSub>)));
    const auto* acts = static_cast<const BlockQ8_K*>(x.row(0));
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kGemmRows) {
        const int nr = static_cast<int>(std::min<int64_t>(kGemmRows, row_end - r0));
        const Rows rows = panel_rows(w + static_cast<size_t>(r0) * w_stride, w_stride, nr);
        for (int64_t i = 0; i < nsb; ++i) pack(rows, i, panel[i]);
        for (int64_t t0 = 0; t0 < n_tok; t0 += kTok) {
            const int nt = static_cast<int>(std::min<int64_t>(kTok, n_tok - t0));
            kTilesK<NSub>[nt](panel, nsb, acts + t0 * nsb, y + t0 * y_stride + r0, y_stride,
                              rows.mask);
        }
    }
}

}  // namespace
}  // namespace gemm512

GemmFn avx512_gemm(DType weight) {
    using namespace gemm512;
    switch (weight) {
        case DType::Q4_0:
            return gemm32<pack_q4_0, 8>;
        case DType::Q5_0:
            return gemm32<pack_q5_0, 16>;
        case DType::Q8_0:
            return gemm32<pack_q8_0, 128>;
        case DType::IQ4_NL:
            return gemm32<pack_iq4_nl, 128>;
        case DType::Q4_K:
            return gemm_k<8, pack_q4_k>;
        case DType::Q5_K:
            return gemm_k<8, pack_q5_k>;
        case DType::Q6_K:
            return gemm_k<16, pack_q6_k>;
        default:
            return nullptr;
    }
}

}  // namespace tandem::quant
#include "target_avx512_end.inc"

#else
namespace tandem::quant {
GemmFn avx512_gemm(DType) {
    return nullptr;
}
}  // namespace tandem::quant
#endif
