// Decode matvec over int8 activations (n_tok <= 8, weight types Q4_0 Q8_0 Q4_K Q5_K Q6_K).
// - k_quantize_q8: each 32 activations of a token become int8 q[32] with a float scale
//   d = max|x| / 127 and the block's sum s = d * sum(q) (the K-quants' mins need it), as the CPU
//   backend quantises its activations.
// - k_matvec_q8: 1, 2 or 4 rows per block of 128 threads; a row is a sequence of "items" (two
//   Q4_0/Q8_0 blocks read as whole words, a sixteenth of a K-quant super-block), and a row's
//   threads take items i, i + threads, ...; an item's weights meet the same number of
//   activation words (16-byte loads) through 4-way int8 dot products, scaled once per block.
//   Consecutive threads read consecutive bytes, so a warp's loads cover contiguous cache lines.
// The int8 weights (nibbles are widened in registers, the Q4_0/Q6_K offsets folded in by byte
// arithmetic) and activations meet in dot4(): __dp4a on CUDA, v_dot4_i32_i8 on AMD targets that
// have it, a plain sum elsewhere.
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdint>
#include <cstdlib>

#include "hip_decode.h"
#include "hip_ops.h"
#include "hip_q8_dot.h"
#include "hip_rope.h"

namespace tandem::hip {
namespace {

constexpr int kQ8Threads = 128;  // matvec block: one output row
constexpr int kQuantThreads = 256;

// grid: ceil(n_tok * n_in / 32 / 8) blocks of 256 threads, a 32-lane group per activation
// block. qs [n_tok, n_in] int8, ds [n_tok, n_in / 32] (d, s).
__global__ void __launch_bounds__(kQuantThreads)
    k_quantize_q8(const float* x, int64_t n_blocks, int8_t* qs, float2* ds) {
    const int64_t i = int64_t(blockIdx.x) * kQuantThreads + threadIdx.x;
    const bool live = i / kQ8Block < n_blocks;
    // Lanes past the end keep going to the shuffles with a zero.
    q8_store_group(live ? x[i] : 0.0f, i, live, qs, ds);
}

// The matrices of one launch (launch_matvec_q8_parts), passed by value; rope.pos non-null:
// q/k/v with their rope and KV stores.
struct Q8Parts {
    const uint8_t* w[kQ8MaxParts];
    const float* bias[kQ8MaxParts];
    float* out[kQ8MaxParts];
    int64_t n_out[kQ8MaxParts];
    int n;
    Q8Rope rope;
};

// Rope: the row (of q or k) at slot s (0..R-1) of the part's block `blk` of R rows. Normal
// mode: rows in order (pairs are neighbours); NeoX: the block's R / 2 pairs j0.. of one head
// take slots 0..R/2-1 (rows j) and R/2.. (rows j + head_dim / 2).
__device__ inline int64_t rope_row(const Q8Rope& r, int64_t blk, int s, int R) {
    if (!r.neox) return blk * R + s;
    const int m = R / 2;
    const int64_t half = r.head_dim / 2, pair0 = blk * m;
    return (pair0 / half) * r.head_dim + pair0 % half + (s < m ? s : s - m + half);
}

// q or k row `row` of token t after the rotation: v its value, pv its pair partner's.
__device__ inline float rope_value(const Q8Rope& r, int64_t row, int t, float v, float pv) {
    const int64_t e = row % r.head_dim, half = r.head_dim / 2;
    const int64_t i = r.neox ? e % half : e / 2;
    const bool second = r.neox ? e >= half : (e & 1) != 0;
    const float2 cs = rope_cos_sin(r.pos[t], i, r.head_dim, r.freq_base, r.freq_scale, r.factors);
    return second ? rope_rotate(pv, v, cs, true) : rope_rotate(v, pv, cs, false);
}

__device__ inline void rope_cache_put(const Q8Rope& r, void* cache, int64_t width, int t,
                                      int64_t row, float v) {
    const int64_t at = (int64_t(*r.n_past) + t) * width + row;
    if (r.cache_f16)
        static_cast<uint16_t*>(cache)[at] = f32_to_f16_bits(v);
    else
        static_cast<float*>(cache)[at] = v;
}

// A block of kQ8Threads = 4 lane groups; W groups share an output row (4 / W rows per block),
// thread i of a row's 32W takes items i, i + 32W, ...; out[t, row] for t < n_tok <= TM. Rows
// run over the parts one after the other (a block may straddle two).
template <uint32_t TypeId, int TM, int W>
__global__ void __launch_bounds__(kQ8Threads)
    k_matvec_q8(Q8Parts parts, int64_t row_stride, int64_t n_in, const int8_t* __restrict__ xq,
                const float2* __restrict__ xds, int n_tok) {
    constexpr DType T = DType(TypeId);  // a number: see type_id() (hip_packed.h)
    using D = Q8Dot<T>;
    constexpr int kGroups = kQ8Threads / kLaneGroup, kRowThreads = W * kLaneGroup;
    __shared__ float part[kGroups][TM];
    const int g = int(threadIdx.x) / kLaneGroup, lane = int(threadIdx.x) % kLaneGroup;
    constexpr int R = kGroups / W;  // rows per block
    int64_t row = int64_t(blockIdx.x) * R + g / W;
    int p = 0;
    if (parts.n > 1 && row >= parts.n_out[0]) {
        row -= parts.n_out[0];
        p = 1;
        if (parts.n > 2 && row >= parts.n_out[1]) {
            row -= parts.n_out[1];
            p = 2;
        }
    }
    const bool rope = parts.rope.pos != nullptr;
    const int64_t blk = row / R;  // the block's index in its part (parts are whole blocks)
    if (rope && p < 2) row = rope_row(parts.rope, blk, g / W, R);
    // Selects, not a dynamic index (which would copy the parameter arrays to local memory).
    const uint8_t* w = p == 0 ? parts.w[0] : p == 1 ? parts.w[1] : parts.w[2];
    const int64_t n_out = p == 0 ? parts.n_out[0] : p == 1 ? parts.n_out[1] : parts.n_out[2];
    // A row past the end reads the last row and writes nothing: every thread reaches the
    // barrier below.
    const uint8_t* wr = w + (row < n_out ? row : n_out - 1) * row_stride;
    Act x[TM];
#pragma unroll
    for (int t = 0; t < TM; ++t) {
        const int tt = t < n_tok ? t : 0;
        x[t].q = reinterpret_cast<const int*>(xq + int64_t(tt) * n_in);
        x[t].ds = xds + int64_t(tt) * (n_in / kQ8Block);
    }
    float acc[TM];
#pragma unroll
    for (int t = 0; t < TM; ++t) acc[t] = 0.0f;
    // 32-bit item indices (a row has far fewer than 2^31 items): fewer instructions per item.
    const int n_items = int(n_in / D::kWeights * D::kItems);
    // Two items per trip: the second item's loads issue before the first one's dots wait.
#pragma unroll 2
    for (int it = int(threadIdx.x) % kRowThreads; it < n_items; it += kRowThreads)
        D::template dot<TM>(wr, it / D::kItems, it % D::kItems, x, n_tok, acc);
#pragma unroll
    for (int t = 0; t < TM; ++t) {
        const float v = group_sum(acc[t]);
        if (lane == 0) part[g][t] = v;
    }
    __syncthreads();
    // Thread t of the row's first group writes token t.
    if (g % W == 0 && lane < TM && lane < n_tok && row < n_out) {
        const float* bias = p == 0 ? parts.bias[0] : p == 1 ? parts.bias[1] : parts.bias[2];
        float* out = p == 0 ? parts.out[0] : p == 1 ? parts.out[1] : parts.out[2];
        float v = 0.0f;
#pragma unroll
        for (int i = 0; i < W; ++i) v += part[g + i][lane];
        v += bias ? bias[row] : 0.0f;
        if (!rope) {
            out[int64_t(lane) * n_out + row] = v;
            return;
        }
        if (p < 2) {  // the partner row's slot, in this block
            const int s = g / W, m = R / 2;
            const int ps = parts.rope.neox ? (s < m ? s + m : s - m) : s ^ 1;
            float pv = 0.0f;
#pragma unroll
            for (int i = 0; i < W; ++i) pv += part[ps * W + i][lane];
            const int64_t prow = rope_row(parts.rope, blk, ps, R);
            pv += bias ? bias[prow] : 0.0f;
            v = rope_value(parts.rope, row, lane, v, pv);
        }
        if (p == 0)
            out[int64_t(lane) * n_out + row] = v;
        else
            rope_cache_put(parts.rope, p == 1 ? parts.rope.k_cache : parts.rope.v_cache, n_out,
                           lane, row, v);
    }
}

// Lane groups per output row: 1, 2 or 4 (4, 2 or 1 rows per block of 4 groups). Defaults from
// an H200 decode sweep (8B, tg128, tok/s for 4 / 2 / 1 groups): Q4_K 198 / 199 / 206 (items of
// 16 bytes: 128 per 4096-row, one per lane of a block), Q4_0 237 / 245 / 228; Q5_K follows Q4_K
// (same items), Q8_0 follows Q4_0 since its items are block pairs too (64 per 4096-row), Q6_K
// keeps 4. TANDEM_HIP_Q8_GROUPS = 1, 2 or 4 overrides, for tuning.
int q8_groups_per_row(DType type) {
    const DType t = file_type(type);
    // Read at every launch (a getenv per matmul when enqueued; replayed graphs keep theirs), so
    // one process can compare the settings.
    if (const char* v = std::getenv("TANDEM_HIP_Q8_GROUPS")) {
        const int n = std::atoi(v);
        return n == 1 || n == 2 ? n : 4;
    }
    return t == DType::Q4_K || t == DType::Q5_K ? 1 : t == DType::Q4_0 || t == DType::Q8_0 ? 2 : 4;
}

template <DType T, int TM>
void matvec_q8_launch(const Q8Parts& parts, int64_t stride, int64_t n_in, const int8_t* xq,
                      const float2* xds, int n_tok, hipStream_t s) {
    const int groups = q8_groups_per_row(T);
    const int64_t rows_per_block = (kQ8Threads / kLaneGroup) / groups;
    int64_t rows = 0;
    for (int i = 0; i < parts.n; ++i) rows += parts.n_out[i];
    const dim3 grid(static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block)),
        block(kQ8Threads);
    if (groups == 1)
        hipLaunchKernelGGL((k_matvec_q8<type_id(T), TM, 1>), grid, block, 0, s, parts, stride, n_in,
                           xq, xds, n_tok);
    else if (groups == 2)
        hipLaunchKernelGGL((k_matvec_q8<type_id(T), TM, 2>), grid, block, 0, s, parts, stride, n_in,
                           xq, xds, n_tok);
    else
        hipLaunchKernelGGL((k_matvec_q8<type_id(T), TM, 4>), grid, block, 0, s, parts, stride, n_in,
                           xq, xds, n_tok);
}

template <DType T>
bool matvec_q8_as(const Q8Matrix* m, int n, int64_t n_in, const void* q8, int64_t n_tok,
                  hipStream_t s, const Q8Rope* rope) {
    using D = Q8Dot<T>;
    const auto stride = static_cast<int64_t>(row_bytes(file_type(T), static_cast<uint64_t>(n_in)));
    if (stride % D::kAlign != 0) return false;
    Q8Parts parts{};
    parts.n = n;
    if (rope) parts.rope = *rope;
    for (int i = 0; i < n; ++i) {
        if (reinterpret_cast<uintptr_t>(m[i].w) % D::kAlign != 0) return false;
        parts.w[i] = static_cast<const uint8_t*>(m[i].w);
        parts.bias[i] = m[i].bias;
        parts.out[i] = m[i].out;
        parts.n_out[i] = m[i].n_out;
    }
    const auto* xq = static_cast<const int8_t*>(q8);
    const auto* xds = reinterpret_cast<const float2*>(xq + n_tok * n_in);
    const int nt = int(n_tok);
    if (n_tok == 1)
        matvec_q8_launch<T, 1>(parts, stride, n_in, xq, xds, nt, s);
    else if (n_tok == 2)
        matvec_q8_launch<T, 2>(parts, stride, n_in, xq, xds, nt, s);
    else if (n_tok <= 4)
        matvec_q8_launch<T, 4>(parts, stride, n_in, xq, xds, nt, s);
    else
        matvec_q8_launch<T, 8>(parts, stride, n_in, xq, xds, nt, s);
    return true;
}

}  // namespace

bool q8_matvec_supported(DType type, int64_t n_in, int64_t n_out, int64_t n_tok) {
    if (n_tok < 1 || n_tok > kMatvecMaxTokens || n_in < 1 || n_out < 1 || n_out > kMaxGridX)
        return false;
    if (is_packed(type)) return n_in % 256 == 0;  // whole groups of 8 blocks
    switch (type) {
        case DType::Q4_0:
        case DType::Q8_0:
            return n_in % 64 == 0;  // items of two blocks (hip_q8_dot.h)
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
            return n_in % 256 == 0;
        default:
            return false;
    }
}

uint64_t q8_act_bytes(int64_t n_in, int64_t n_tok) {
    // int8 values, then (d, s) per 32 (the values' size is a multiple of 32: float2-aligned).
    return uint64_t(n_tok) * uint64_t(n_in) + uint64_t(n_tok) * uint64_t(n_in / kQ8Block) * 8;
}

void launch_quantize_q8(const float* x, int64_t n_in, int64_t n_tok, void* q8, hipStream_t s) {
    launch_require(x && q8 && n_in % kQ8Block == 0 && n_tok >= 1 && n_tok <= kMatvecMaxTokens,
                   "quantize_q8", std::to_string(n_tok) + " x " + std::to_string(n_in));
    const int64_t n = n_tok * n_in;
    auto* qs = static_cast<int8_t*>(q8);
    auto* ds = reinterpret_cast<float2*>(qs + n);
    hipLaunchKernelGGL(k_quantize_q8,
                       dim3(static_cast<unsigned>((n + kQuantThreads - 1) / kQuantThreads)),
                       dim3(kQuantThreads), 0, s, x, n / kQ8Block, qs, ds);
}

bool q8_rope_supported(DType type, int64_t head_dim) {
    const int rows_per_block = (kQ8Threads / kLaneGroup) / q8_groups_per_row(type);
    return rows_per_block >= 2 && head_dim % (2 * rows_per_block) == 0;
}

bool launch_matvec_q8_parts(DType type, const Q8Matrix* m, int n, int64_t n_in, const void* q8,
                            int64_t n_tok, hipStream_t s, const Q8Rope* rope) {
    if (!m || n < 1 || n > kQ8MaxParts || !q8) return false;
    if (rope && (n < 2 || !rope->pos || !rope->n_past || !rope->k_cache ||
                 (n == 3 && !rope->v_cache) || !q8_rope_supported(type, rope->head_dim) ||
                 m[0].n_out % rope->head_dim != 0 || m[1].n_out % rope->head_dim != 0))
        return false;
    int64_t rows = 0;
    for (int i = 0; i < n; ++i) {
        if (!m[i].w || !m[i].out || !q8_matvec_supported(type, n_in, m[i].n_out, n_tok))
            return false;
        rows += m[i].n_out;
    }
    if (rows > kMaxGridX) return false;
    bool ok = false;
    if (visit_packed(type, [&](auto P) {
            ok = matvec_q8_as<decltype(P)::value>(m, n, n_in, q8, n_tok, s, rope);
        }))
        return ok;
    switch (type) {
        case DType::Q4_0:
            return matvec_q8_as<DType::Q4_0>(m, n, n_in, q8, n_tok, s, rope);
        case DType::Q8_0:
            return matvec_q8_as<DType::Q8_0>(m, n, n_in, q8, n_tok, s, rope);
        case DType::Q4_K:
            return matvec_q8_as<DType::Q4_K>(m, n, n_in, q8, n_tok, s, rope);
        case DType::Q5_K:
            return matvec_q8_as<DType::Q5_K>(m, n, n_in, q8, n_tok, s, rope);
        case DType::Q6_K:
            return matvec_q8_as<DType::Q6_K>(m, n, n_in, q8, n_tok, s, rope);
        default:
            return false;
    }
}

bool launch_matvec_q8(DType type, const void* w, int64_t n_in, int64_t n_out, const void* q8,
                      int64_t n_tok, const float* bias, float* out, hipStream_t s) {
    const Q8Matrix m{w, n_out, bias, out};
    return launch_matvec_q8_parts(type, &m, 1, n_in, q8, n_tok, s);
}

}  // namespace tandem::hip
