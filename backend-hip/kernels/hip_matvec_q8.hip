// Decode matvec over int8 activations (n_tok <= 8, weight types Q4_0 Q8_0 Q4_K Q5_K Q6_K).
// - k_quantize_q8: each 32 activations of a token become int8 q[32] with a float scale
//   d = max|x| / 127 and the block's sum s = d * sum(q) (Q4_0's offset and the K-quants' mins
//   need it), as the CPU backend quantises its activations; the values in the halves layout of
//   hip_q8_layout.h.
// - k_matvec_q8: a block of 128 threads (64 for Q4_K: q8_block_groups) takes R (1, 2 or 4)
//   consecutive output rows; a row is a sequence of "items" (a Q4_0/Q8_0 block or block pair, a
//   slice of a K-quant super-block, hip_q8_dot.h) and the block's threads take items i,
//   i + threads, ... of every one of its rows:
//   an item's activations are loaded once per token and meet the R rows' weights, which divides
//   the activation loads per weight byte (2 bytes of int8 activations per byte of Q4_0) by R.
//   Consecutive threads read consecutive bytes, so a warp's loads fill whole cache lines.
// The int8 weights (nibbles are widened in registers, the Q6_K offset folded in by byte
// arithmetic) and activations meet in dot4(): __dp4a on CUDA, v_dot4_i32_i8 on AMD targets that
// have it, a plain sum elsewhere.
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdint>
#include <cstdlib>

#include "hip_decode.h"
#include "hip_launch_overlap.h"
#include "hip_ops.h"
#include "hip_q8_dot.h"
#include "hip_q8_rows.h"
#include "hip_rope.h"

namespace tandem::hip {
namespace {

constexpr int kQuantThreads = 256;

// grid: ceil(n_tok * n_in / 32 / 8) blocks of 256 threads, a 32-lane group per activation
// block. qs [n_tok, n_in] int8 (hip_q8_layout.h), ds [n_tok, n_in / 32] (d, s).
__global__ void __launch_bounds__(kQuantThreads)
    k_quantize_q8(const float* x, int64_t n_blocks, int8_t* qs, float2* ds) {
    const int64_t i = int64_t(blockIdx.x) * kQuantThreads + threadIdx.x;
    const bool live = i / kQ8Block < n_blocks;
    grid_wait();
    grid_launch_dependents();
    // Lanes past the end keep going to the shuffles with a zero.
    q8_store_group(live ? x[i] : 0.0f, i, live, qs, ds);
}

// The matrices of one launch (launch_matvec_q8_parts), passed by value; rope.cs non-null:
// q/k/v with their rope and KV stores.
struct Q8Parts {
    const uint8_t* w[kQ8MaxParts];
    const float* bias[kQ8MaxParts];
    float* out[kQ8MaxParts];
    int64_t n_out[kQ8MaxParts];
    int n;
    Q8Rope rope;
    Q8Norm norm;   // ss non-null: the input is a norm's unnormalised x * w
                   // (launch_matvec_q8_resid_norm)
    int prefetch;  // the block's weights into L2 before grid_wait (prefetch_weights())
};

__host__ __device__ inline int64_t parts_rows(const Q8Parts& parts) {
    int64_t rows = 0;
    for (int i = 0; i < parts.n; ++i) rows += parts.n_out[i];
    return rows;
}

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
    const float2 cs = r.cs[t * half + i];
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

// One token's q8 activations of the launch (tokens past n_tok read token 0: loads without a
// condition, results not written).
template <int TM>
__device__ inline void token_acts(const int8_t* xq, const float2* xds, int n_in, int n_tok,
                                  Act (&x)[TM]) {
#pragma unroll
    for (int t = 0; t < TM; ++t) {
        const int tt = t < n_tok ? t : 0;
        x[t].q = reinterpret_cast<const int4*>(xq + int64_t(tt) * n_in);
        x[t].ds = xds + int64_t(tt) * (n_in / kQ8Block);
    }
}

// Row g of the launch (rows run over the parts one after the other) as part p and row r in it;
// a row past the end is the last part's last row (read, never written: every thread reaches
// the barrier). Selects, not a dynamic index (which would copy the parameter arrays to local
// memory).
__device__ inline void locate_row(const Q8Parts& parts, int64_t g, int& p, int64_t& r) {
    const int64_t n0 = parts.n_out[0], n1 = parts.n > 1 ? parts.n_out[1] : 0;
    p = parts.n > 1 && g >= n0 ? (parts.n > 2 && g >= n0 + n1 ? 2 : 1) : 0;
    r = g - (p >= 1 ? n0 : 0) - (p == 2 ? n1 : 0);
    const int64_t n_out = p == 0 ? n0 : p == 1 ? n1 : parts.n_out[2];
    if (r >= n_out) r = n_out - 1;
}

// Slot r (0..R-1) of the block whose first row of the launch is `first` (blk: its index in its
// part) as part p and row in it: the rows in order, or with rope (q, k) rope_row's pair order.
template <bool Rope, int R>
__device__ inline void slot_row(const Q8Parts& parts, int64_t first, int64_t blk, int r, int& p,
                                int64_t& row) {
    locate_row(parts, first + r, p, row);
    if (Rope && p < 2) row = rope_row(parts.rope, blk, r, R);
}

// The R rows of block blockIdx.x, out[t, row] for t < n_tok <= TM. Rope (parts.rope.cs set):
// a block's rows are whole rotation pairs of one part (rope_row; parts are whole blocks then).
// A template flag, so the other launches' kernels carry none of its code (when it computed its
// double-precision angles itself, before launch_rope_table, that took every launch's kernel
// from 40 to 56 registers, 12 to 9 blocks per SM: 8B gate + up 25.1 -> 20.1 us at 2 rows per
// block on an H200, docs/hip.md).
template <uint32_t TypeId, int TM, int R, bool Rope, bool Norm, int G>
__global__ void __launch_bounds__(G* kLaneGroup)
    k_matvec_q8(Q8Parts parts, int64_t row_stride, int n_in, const int8_t* __restrict__ xq,
                const float2* __restrict__ xds, int n_tok) {
    constexpr DType T = DType(TypeId);                     // a number: see type_id() (hip_packed.h)
    constexpr int kGroups = G, kThreads = G * kLaneGroup;  // G lane groups on the block's R rows
    __shared__ float part[kGroups][R * TM];
    const int g = int(threadIdx.x) / kLaneGroup, lane = int(threadIdx.x) % kLaneGroup;
    constexpr bool rope = Rope && R >= 2;
    const int64_t first = int64_t(blockIdx.x) * R;
    int p0;
    int64_t r0;
    locate_row(parts, first, p0, r0);
    const int64_t blk = r0 / R;  // rope: the block's index in its part
    const uint8_t* wr[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        int p;
        int64_t row;
        slot_row<rope, R>(parts, first, blk, r, p, row);
        wr[r] = (p == 0 ? parts.w[0] : p == 1 ? parts.w[1] : parts.w[2]) + row * row_stride;
        if (parts.prefetch) grid_prefetch_l2(wr[r], row_stride, int(threadIdx.x), kThreads);
    }
    grid_wait();  // weights above; activations, sums, rope table and caches below
    grid_launch_dependents();
    Act x[TM];
    token_acts(xq, xds, n_in, n_tok, x);
    // Norm: this thread's share of each token's sums of squares (parts.norm.ss), the first
    // kNssRegs loaded into registers now and summed after the loop (the rest there). H200, 8B
    // Q4_0 tg128 (docs/hip.md): 462 tok/s; summed before the loop (each block waiting on an L2
    // trip before its first weight load) 452, loaded and summed after it 454.
    constexpr int kNssRegs = 4;
    const int n_ss = n_in / kQ8Block;
    float nss[Norm ? TM : 1][kNssRegs] = {};
    if constexpr (Norm) {
#pragma unroll
        for (int t = 0; t < TM; ++t) {
            const float* ss = parts.norm.ss + int64_t(t < n_tok ? t : 0) * n_ss;
#pragma unroll
            for (int k = 0; k < kNssRegs; ++k) {
                const int i = int(threadIdx.x) + k * kThreads;
                nss[t][k] = i < n_ss ? ss[i] : 0.0f;
            }
        }
    }
    float acc[R][TM];
    rows_dot<T, TM, R, kThreads, kQ8ItemsATrip<T, TM>>(wr, x, n_in, int(threadIdx.x), acc);
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int t = 0; t < TM; ++t) {
            const float v = group_sum(acc[r][t]);
            if (lane == 0) part[g][r * TM + t] = v;
        }
    __shared__ float norm_part[kGroups][Norm ? TM : 1];
    if constexpr (Norm) {
#pragma unroll
        for (int t = 0; t < TM; ++t) {
            const float* ss = parts.norm.ss + int64_t(t < n_tok ? t : 0) * n_ss;
            float v = 0.0f;
#pragma unroll
            for (int k = 0; k < kNssRegs; ++k) v += nss[t][k];
            for (int i = int(threadIdx.x) + kNssRegs * kThreads; i < n_ss; i += kThreads)
                v += ss[i];
            v = group_sum(v);
            if (lane == 0) norm_part[g][t] = v;
        }
    }
    __syncthreads();
    // Thread r * TM + t writes row slot r, token t.
    const int q = int(threadIdx.x), r = q / TM, t = q % TM;
    if (q >= R * TM || t >= n_tok || first + r >= parts_rows(parts)) return;
    int p;
    int64_t row;
    slot_row<rope, R>(parts, first, blk, r, p, row);
    const float* bias = p == 0 ? parts.bias[0] : p == 1 ? parts.bias[1] : parts.bias[2];
    float* out = p == 0 ? parts.out[0] : p == 1 ? parts.out[1] : parts.out[2];
    const int64_t n_out = p == 0 ? parts.n_out[0] : p == 1 ? parts.n_out[1] : parts.n_out[2];
    // Norm: the dot of the unnormalised x * w, times the norm's 1 / rms (a scalar per token).
    float scale = 1.0f;
    if constexpr (Norm) {
        float ss = 0.0f;
#pragma unroll
        for (int i = 0; i < kGroups; ++i) ss += norm_part[i][t];
        scale = rsqrtf(ss / float(n_in) + parts.norm.eps);
    }
    float v = 0.0f;
#pragma unroll
    for (int i = 0; i < kGroups; ++i) v += part[i][q];
    v = __fmul_rn(v, scale) + (bias ? bias[row] : 0.0f);  // no FMA: the same bits in every variant
    if constexpr (!rope) {
        out[int64_t(t) * n_out + row] = v;
        return;
    }
    if (p < 2) {  // the partner row's slot, in this block
        const int m = R / 2;
        const int ps = parts.rope.neox ? (r < m ? r + m : r - m) : r ^ 1;
        const int64_t prow = rope_row(parts.rope, blk, ps, R);
        float pv = 0.0f;
#pragma unroll
        for (int i = 0; i < kGroups; ++i) pv += part[i][ps * TM + t];
        pv = __fmul_rn(pv, scale) + (bias ? bias[prow] : 0.0f);
        v = rope_value(parts.rope, row, t, v, pv);
    }
    if (p == 0)
        out[int64_t(t) * n_out + row] = v;
    else
        rope_cache_put(parts.rope, p == 1 ? parts.rope.k_cache : parts.rope.v_cache, n_out, t, row,
                       v);
}

constexpr int kResidRows = kQ8Block;  // rows per block of k_matvec_q8_resid_norm
constexpr int kResidR = 4;            // rows per 128-thread group in it
constexpr int kResidThreads = kResidRows / kResidR * kQ8Threads;  // 1024

struct ResidNormOut {
    const float* bias;   // [n_out] or null
    const float* resid;  // [n_tok, n_out]
    float* sum;          // [n_tok, n_out]
    const float* nw;     // the norm's weights [n_out] or null
    int8_t* qs;          // q8 values of sum * nw [n_tok, n_out] (hip_q8_layout.h)
    float2* ds;          // their (d, s) [n_tok, n_out / 32]
    float* ss;           // sums of squares of sum [n_tok, n_out / 32]
    int prefetch;        // as Q8Parts::prefetch
};

// Block b: output rows 32b..32b+31, a whole q8 block, so the block can quantise the norm's input
// itself. Its eight groups of 128 threads run k_matvec_q8's loop over 4 rows each; then lane
// group t (token t) holds the block's 32 sums, one per lane, and writes sum, the q8 block of
// sum * nw and the block's sum of squares (launch_matvec_q8_resid_norm).
template <uint32_t TypeId, int TM, int Unroll = 2>
__global__ void __launch_bounds__(kResidThreads)
    k_matvec_q8_resid_norm(const uint8_t* __restrict__ w, int64_t row_stride, int n_in,
                           const int8_t* __restrict__ xq, const float2* __restrict__ xds, int n_tok,
                           int64_t n_out, ResidNormOut o) {
    constexpr DType T = DType(TypeId);
    constexpr int R = kResidR, kWarps = kResidThreads / kLaneGroup;
    __shared__ float part[kWarps][R * TM];
    const int tid = int(threadIdx.x), gi = tid / kQ8Threads;
    const int64_t first = int64_t(blockIdx.x) * kResidRows + gi * R;
    const uint8_t* wr[R];
#pragma unroll
    for (int r = 0; r < R; ++r) wr[r] = w + (first + r) * row_stride;
    if (o.prefetch) grid_prefetch_l2(wr[0], R * row_stride, tid % kQ8Threads, kQ8Threads);
    grid_wait();
    grid_launch_dependents();
    Act x[TM];
    token_acts(xq, xds, n_in, n_tok, x);
    float acc[R][TM];
    rows_dot<T, TM, R, kQ8Threads, Unroll>(wr, x, n_in, tid % kQ8Threads, acc);
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int t = 0; t < TM; ++t) {
            const float v = group_sum(acc[r][t]);
            if (tid % kLaneGroup == 0) part[tid / kLaneGroup][r * TM + t] = v;
        }
    __syncthreads();
    // Lane group t, lane j: row 32b + j of token t (group j / 4's row j % 4). Whole lane groups
    // take this branch (the quantiser's shuffles need all 32 lanes).
    const int t = tid / kLaneGroup, j = tid % kLaneGroup;
    if (t >= TM) return;
    constexpr int kGroupWarps = kQ8Threads / kLaneGroup;
    float v = 0.0f;
#pragma unroll
    for (int i = 0; i < kGroupWarps; ++i) v += part[j / R * kGroupWarps + i][(j % R) * TM + t];
    const int64_t row = int64_t(blockIdx.x) * kResidRows + j;
    const bool live = t < n_tok;
    const int64_t at = int64_t(live ? t : 0) * n_out + row;
    v += (o.bias ? o.bias[row] : 0.0f) + o.resid[at];
    if (live) o.sum[at] = v;
    const float ss = group_sum(v * v);
    if (live && j == 0) o.ss[int64_t(t) * (n_out / kQ8Block) + blockIdx.x] = ss;
    q8_store_group(v * (o.nw ? o.nw[row] : 1.0f), row, live, o.qs + int64_t(t) * n_out,
                   o.ds + int64_t(t) * (n_out / kQ8Block));
}

// Whether a block asks L2 for its rows before grid_wait (hip_launch_overlap.h). Off for every
// type: on the H200 it once paid for the K-quants (session 13: Q4_K 367 tok/s with, 357
// without), but with today's kernels it costs tg128 2 % on Q4_K_M, 5 % on Q6_K and 9 % on
// Q8_0 (Q5_K_M even), and the first 128-1024 bytes of each row gained nothing on any type
// (session 30, docs/hip.md).
// TANDEM_HIP_PREFETCH=1 turns it on, for tuning.
bool prefetch_weights() {
    const char* v = std::getenv("TANDEM_HIP_PREFETCH");
    return v && std::atoi(v) != 0;
}

// Output rows per block: 4, 2 for Q8_0. H200, one 8B-shaped matvec at a time
// (packaging/gpu/matvec_lab.cu, docs/hip.md): Q4_0 gate+up 26.9 / 20.1 / 17.2 us for 1 / 2 / 4
// rows, Q8_0 32.5 / 29.3 / 30.4. On AMD 2 for Q4_K / Q5_K too: their 64-weight items at 4 rows
// take 198-256 VGPRs a lane and Q5_K's spill 80-104 bytes to scratch (gfx1030, hipcc's
// -Rpass-analysis=kernel-resource-usage, one token); at 2 rows 128-190, none spilled, no more than
// the 32-weight items took at 4 (143-197). Unmeasured on an AMD GPU. The CUDA path keeps 4 (nvcc:
// 72-116 registers at 4 rows, at most 4 bytes spilled; session 31: with the 32-weight items
// Q5_K_M ran the same at 4 and 2 rows on the H200).
// TANDEM_HIP_Q8_ROWS = 1, 2 or 4 overrides, for tuning; read at every launch (a getenv per
// matmul when enqueued; replayed graphs keep theirs), so one process can compare the settings.
int q8_rows_per_block(DType type) {
    if (const char* v = std::getenv("TANDEM_HIP_Q8_ROWS")) {
        const int n = std::atoi(v);
        return n == 1 || n == 2 ? n : 4;
    }
    if (file_type(type) == DType::Q8_0) return 2;
#if !defined(TANDEM_HIP_ON_CUDA)
    if (is_k45(type)) return 2;
#endif
    return 4;
}

// Lane groups (32 threads) per block on its R rows, by weight type. H200, 8B tg128, two runs
// each of 4 / 2 / 1 groups (docs/hip.md): Q4_K 369.5 / 386.4 / 355.5 tok/s, Q4_0 474.6 / 478.0
// / 483.2, Q8_0 360.1 / 344.8 / 347.1. One group (32-thread blocks) would leave half of a
// wave64 idle on AMD's CDNA, so Q4_0 keeps 4 for its 1.8 %. Repacked Q6_K's items are 64
// weights (4 a super-block): at 4096 inputs 64 of them a row, one a thread with 2 groups.
template <DType T>
constexpr int q8_block_groups() {
    return file_type(T) == DType::Q4_K || T == kQ6_KR ? 2 : 4;
}

// Rows too short for a block's threads (a 2048-input row of repacked Q4_0 or Q8_0 has 64 items,
// half a 128-thread block: Qwen3-30B-A3B's q/k/v and LM head, Llama 3.2 1B's matvecs): two lane
// groups, so every thread has an item and the grid twice the blocks' loads in flight. Q4_0 rows
// of 8192+ inputs (a 70B's q/k/v, gate / up, LM head) take two as well: each thread then has two
// items a row where it had one, eight loads in flight over the 4 rows, as the Vulkan backend's
// 64-invocation split there (kQ8WideRow, docs/vulkan.md session 34). H200, 70B Q4_0 (docs/hip.md,
// session 35): gate + up 71.7 -> 69.3 us, LM head 148.4 -> 142.1. 8B's launches read 4096 inputs.
// TANDEM_HIP_Q8_GROUPS = 4 keeps the type's groups, 2 takes two for every row, for tuning.
constexpr int kQ8WideRow = 8192;
template <DType T>
int q8_groups_for(int n_in) {
    constexpr int G = q8_block_groups<T>();
    if (const char* v = std::getenv("TANDEM_HIP_Q8_GROUPS")) {
        const int n = std::atoi(v);
        if (n == 4) return G;
        if (n == 2) return 2;
    }
    const int items = n_in / Q8Dot<T>::kWeights * Q8Dot<T>::kItems;
    const bool wide_q4_0 = file_type(T) == DType::Q4_0 && n_in >= kQ8WideRow;
    return G == 4 && (items < G * kLaneGroup || wide_q4_0) ? 2 : G;
}

template <DType T, int TM, int R, bool Norm, int G>
void matvec_q8_launch_groups(const Q8Parts& parts, int64_t stride, int n_in, const int8_t* xq,
                             const float2* xds, int n_tok, hipStream_t s) {
    const int64_t rows = parts_rows(parts);
    const dim3 grid(static_cast<unsigned>((rows + R - 1) / R)), block(G * kLaneGroup);
    if (parts.rope.cs)
        TANDEM_LAUNCH_OVERLAPPED((k_matvec_q8<type_id(T), TM, R, true, Norm, G>), grid, block, 0, s,
                                 parts, stride, n_in, xq, xds, n_tok);
    else
        TANDEM_LAUNCH_OVERLAPPED((k_matvec_q8<type_id(T), TM, R, false, Norm, G>), grid, block, 0,
                                 s, parts, stride, n_in, xq, xds, n_tok);
}

template <DType T, int TM, int R, bool Norm>
void matvec_q8_launch_norm(const Q8Parts& parts, int64_t stride, int n_in, const int8_t* xq,
                           const float2* xds, int n_tok, hipStream_t s) {
    constexpr int G = q8_block_groups<T>();
    if (G == 4 && q8_groups_for<T>(n_in) == 2)
        matvec_q8_launch_groups<T, TM, R, Norm, 2>(parts, stride, n_in, xq, xds, n_tok, s);
    else
        matvec_q8_launch_groups<T, TM, R, Norm, G>(parts, stride, n_in, xq, xds, n_tok, s);
}

// The norm's scale only for decode token counts (launch_matvec_q8_resid_norm's), so the longer
// ones carry no second copy of each kernel.
template <DType T, int TM, int R>
void matvec_q8_launch_rows(const Q8Parts& parts, int64_t stride, int n_in, const int8_t* xq,
                           const float2* xds, int n_tok, hipStream_t s) {
    if constexpr (TM <= kQ8NormMaxTokens) {
        if (parts.norm.ss) {
            matvec_q8_launch_norm<T, TM, R, true>(parts, stride, n_in, xq, xds, n_tok, s);
            return;
        }
    }
    matvec_q8_launch_norm<T, TM, R, false>(parts, stride, n_in, xq, xds, n_tok, s);
}

template <DType T, int TM>
void matvec_q8_launch(const Q8Parts& parts, int64_t stride, int n_in, const int8_t* xq,
                      const float2* xds, int n_tok, int rows_per_block, hipStream_t s) {
    if (rows_per_block == 1)
        matvec_q8_launch_rows<T, TM, 1>(parts, stride, n_in, xq, xds, n_tok, s);
    else if (rows_per_block == 2)
        matvec_q8_launch_rows<T, TM, 2>(parts, stride, n_in, xq, xds, n_tok, s);
    else
        matvec_q8_launch_rows<T, TM, 4>(parts, stride, n_in, xq, xds, n_tok, s);
}

template <DType T>
bool matvec_q8_as(const Q8Matrix* m, int n, int64_t n_in, const void* q8, int64_t n_tok,
                  hipStream_t s, const Q8Rope* rope, const Q8Norm* norm) {
    const auto stride = static_cast<int64_t>(row_bytes(file_type(T), static_cast<uint64_t>(n_in)));
    Q8Parts parts{};
    parts.n = n;
    parts.prefetch = prefetch_weights() ? 1 : 0;
    if (rope) parts.rope = *rope;
    if (norm) parts.norm = *norm;
    for (int i = 0; i < n; ++i) {
        if (!q8_rows_aligned<T>(m[i].w, n_in)) return false;
        parts.w[i] = static_cast<const uint8_t*>(m[i].w);
        parts.bias[i] = m[i].bias;
        parts.out[i] = m[i].out;
        parts.n_out[i] = m[i].n_out;
    }
    const int rows_per_block = q8_rows_per_block(T);
    if (rope && (rows_per_block < 2 || rope->head_dim % (2 * rows_per_block) != 0)) return false;
    const auto* xq = static_cast<const int8_t*>(q8);
    const auto* xds = reinterpret_cast<const float2*>(xq + n_tok * n_in);
    const int nt = int(n_tok), ni = int(n_in);
    if (n_tok == 1)
        matvec_q8_launch<T, 1>(parts, stride, ni, xq, xds, nt, rows_per_block, s);
    else if (n_tok == 2)
        matvec_q8_launch<T, 2>(parts, stride, ni, xq, xds, nt, rows_per_block, s);
    else if (n_tok <= 4)
        matvec_q8_launch<T, 4>(parts, stride, ni, xq, xds, nt, rows_per_block, s);
    else
        matvec_q8_launch<T, 8>(parts, stride, ni, xq, xds, nt, rows_per_block, s);
    return true;
}

template <DType T>
bool matvec_q8_resid_norm_as(const void* w, int64_t n_in, int64_t n_out, const void* q8,
                             int64_t n_tok, const ResidNormOut& o, hipStream_t s) {
    if (!q8_rows_aligned<T>(w, n_in)) return false;
    const auto stride = static_cast<int64_t>(row_bytes(file_type(T), static_cast<uint64_t>(n_in)));
    const auto* xq = static_cast<const int8_t*>(q8);
    const auto* xds = reinterpret_cast<const float2*>(xq + n_tok * n_in);
    const dim3 grid(static_cast<unsigned>(n_out / kResidRows)), block(kResidThreads);
    const auto* wb = static_cast<const uint8_t*>(w);
    // Items a trip: the 64-weight items (repacked Q6_K's, three 16-byte loads; Q4_K / Q5_K's,
    // two or four) one at a time under the block's 64-register cap. H200, 8B tg128
    // (docs/hip.md): Q6_K 383 tok/s against 295 at two, Q4_K_M 431 against 377; the other types
    // keep two (Q4_0 at one: 508-520 against 533).
    constexpr int U = T == kQ6_KR || is_k45(T) ? 1 : 2;
    if (n_tok == 1)
        TANDEM_LAUNCH_OVERLAPPED((k_matvec_q8_resid_norm<type_id(T), 1, U>), grid, block, 0, s, wb,
                                 stride, int(n_in), xq, xds, int(n_tok), n_out, o);
    else
        TANDEM_LAUNCH_OVERLAPPED((k_matvec_q8_resid_norm<type_id(T), 2, U>), grid, block, 0, s, wb,
                                 stride, int(n_in), xq, xds, int(n_tok), n_out, o);
    return true;
}

}  // namespace

bool q8_matvec_supported(DType type, int64_t n_in, int64_t n_out, int64_t n_tok) {
    if (n_tok < 1 || n_tok > kMatvecMaxTokens || n_in < 1 || n_in > (int64_t(1) << 30) ||
        n_out < 1 || n_out > kMaxGridX)
        return false;
    // Rows of whole groups of the activation layout (hip_q8_layout.h), which also makes them
    // whole items of every type: Q4_0/Q8_0 block pairs, 8-block groups when repacked,
    // K-quant super-blocks.
    if (n_in % kQ8LayoutGroup != 0 || (is_packed(type) && n_in % packed_group_weights(type) != 0))
        return false;
    switch (file_type(type)) {
        case DType::Q4_0:
        case DType::Q8_0:
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
            return true;
        default:
            return false;
    }
}

uint64_t q8_act_bytes(int64_t n_in, int64_t n_tok) {
    // int8 values, then (d, s) per 32 (the values' size is a multiple of 32: float2-aligned).
    return uint64_t(n_tok) * uint64_t(n_in) + uint64_t(n_tok) * uint64_t(n_in / kQ8Block) * 8;
}

void launch_quantize_q8(const float* x, int64_t n_in, int64_t n_tok, void* q8, hipStream_t s) {
    launch_require(x && q8 && n_in % kQ8LayoutGroup == 0 && n_tok >= 1 && n_tok <= kMatvecMaxTokens,
                   "quantize_q8", std::to_string(n_tok) + " x " + std::to_string(n_in));
    enqueue_quantize_q8(x, n_in, n_tok, q8, s);
}

void enqueue_quantize_q8(const float* x, int64_t n_in, int64_t rows, void* q8, hipStream_t s) {
    const int64_t n = rows * n_in;
    auto* qs = static_cast<int8_t*>(q8);
    auto* ds = reinterpret_cast<float2*>(qs + n);
    TANDEM_LAUNCH_OVERLAPPED(k_quantize_q8,
                             dim3(static_cast<unsigned>((n + kQuantThreads - 1) / kQuantThreads)),
                             dim3(kQuantThreads), 0, s, x, n / kQ8Block, qs, ds);
}

bool q8_rope_supported(DType type, int64_t head_dim) {
    const int rows_per_block = q8_rows_per_block(type);
    return rows_per_block >= 2 && head_dim % (2 * rows_per_block) == 0;
}

bool launch_matvec_q8_parts(DType type, const Q8Matrix* m, int n, int64_t n_in, const void* q8,
                            int64_t n_tok, hipStream_t s, const Q8Rope* rope, const Q8Norm* norm) {
    if (!m || n < 1 || n > kQ8MaxParts || !q8) return false;
    if (norm && (!norm->ss || n_tok > kQ8NormMaxTokens)) return false;
    if (rope && (n < 2 || !rope->cs || !rope->n_past || !rope->k_cache ||
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
    visit_q8_type(type, [&](auto P) {
        ok = matvec_q8_as<decltype(P)::value>(m, n, n_in, q8, n_tok, s, rope, norm);
    });
    return ok;
}

bool launch_matvec_q8(DType type, const void* w, int64_t n_in, int64_t n_out, const void* q8,
                      int64_t n_tok, const float* bias, float* out, hipStream_t s,
                      const Q8Norm* norm) {
    const Q8Matrix m{w, n_out, bias, out};
    return launch_matvec_q8_parts(type, &m, 1, n_in, q8, n_tok, s, nullptr, norm);
}

bool launch_matvec_q8_resid_norm(DType type, const void* w, int64_t n_in, int64_t n_out,
                                 const void* q8, int64_t n_tok, const float* bias,
                                 const float* resid, float* sum, const float* nw, void* q8_out,
                                 float* ss, hipStream_t s) {
    if (!w || !q8 || !resid || !sum || !q8_out || !ss || n_tok < 1 || n_tok > kQ8NormMaxTokens ||
        n_out % kQ8LayoutGroup != 0 || !q8_matvec_supported(type, n_in, n_out, n_tok))
        return false;
    auto* qs = static_cast<int8_t*>(q8_out);
    const ResidNormOut o{bias, resid,
                         sum,  nw,
                         qs,   reinterpret_cast<float2*>(qs + n_tok * n_out),
                         ss,   prefetch_weights() ? 1 : 0};
    bool ok = false;
    visit_q8_type(type, [&](auto P) {
        ok = matvec_q8_resid_norm_as<decltype(P)::value>(w, n_in, n_out, q8, n_tok, o, s);
    });
    return ok;
}

}  // namespace tandem::hip
