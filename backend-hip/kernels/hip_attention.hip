// Rotary embedding, KV store and fused causal attention (GQA, sliding window, softcap) for the
// HIP backend. Attention is one block per (token, head) with an online softmax over tiles of
// keys, so no score buffer grows with the context; decode steps split the keys
// (hip_attention_split.h), prefill takes 32 query rows a block (hip_attention_flash.h).
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdint>
#include <cstdlib>
#include <string>

#include "hip_attention_flash.h"
#include "hip_attention_mma.h"
#include "hip_attention_split.h"
#include "hip_attention_split_mma.h"
#include "hip_blocks.h"
#include "hip_decode.h"
#include "hip_launch_overlap.h"
#include "hip_ops.h"
#include "hip_q8_dot.h"
#include "hip_rope.h"

namespace tandem::hip {
namespace {

constexpr int kTile = 128;              // keys per tile = threads per attention block
constexpr int kMaxSplitsCombined = 64;  // k_attention_combine's shared weights
constexpr int kMaxDimsPerThread = 4;    // head_dim <= 512

template <int Block, bool Max>
__device__ float block_reduce(float v, float* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int stride = Block / 2; stride > 0; stride >>= 1) {
        if (static_cast<int>(threadIdx.x) < stride) {
            const float o = sh[threadIdx.x + stride];
            sh[threadIdx.x] = Max ? fmaxf(sh[threadIdx.x], o) : sh[threadIdx.x] + o;
        }
        __syncthreads();
    }
    const float r = sh[0];
    __syncthreads();
    return r;
}

// Element i of head row r (token t = r / n_head) into cache row *n_past + t (f16 or f32).
__device__ inline void cache_put(void* cache, int f16, const int32_t* n_past, int64_t r,
                                 int64_t n_head, int64_t head_dim, int64_t i, float v) {
    const int64_t t = r / n_head, h = r % n_head;
    const int64_t at = ((int64_t(*n_past) + t) * n_head + h) * head_dim + i;
    if (f16)
        static_cast<uint16_t*>(cache)[at] = f32_to_f16_bits(v);
    else
        static_cast<float*>(cache)[at] = v;
}

// grid (n_tokens * n_head); block 64: one thread per rotated pair. cache (or null): the rows
// also go into the KV cache at row *n_past + t (the K rope and its store as one launch).
__global__ void k_rope(const float* x, const int32_t* pos, int64_t n_head, int64_t head_dim,
                       int64_t n_rot, int neox, float freq_base, float freq_scale,
                       const float* factors, float* out, void* cache, int cache_f16,
                       const int32_t* n_past) {
    const int64_t r = blockIdx.x, t = r / n_head;
    const float* xr = x + r * head_dim;
    float* o = out + r * head_dim;
    const int64_t half = n_rot / 2;
    for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
        const float2 cs = rope_cos_sin(pos[t], i, n_rot, freq_base, freq_scale, factors);
        const int64_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        const float va = xr[i0], vb = xr[i1];
        const float ra = rope_rotate(va, vb, cs, false), rb = rope_rotate(va, vb, cs, true);
        o[i0] = ra;
        o[i1] = rb;
        if (cache) {
            cache_put(cache, cache_f16, n_past, r, n_head, head_dim, i0, ra);
            cache_put(cache, cache_f16, n_past, r, n_head, head_dim, i1, rb);
        }
    }
    for (int64_t i = n_rot + threadIdx.x; i < head_dim; i += blockDim.x) {
        o[i] = xr[i];
        if (cache) cache_put(cache, cache_f16, n_past, r, n_head, head_dim, i, xr[i]);
    }
}

// grid (n_tok); table [n_tok, n_rot / 2].
__global__ void k_rope_table(const int32_t* pos, int64_t n_rot, float freq_base, float freq_scale,
                             const float* factors, float2* table) {
    const int64_t t = blockIdx.x, half = n_rot / 2;
    grid_wait();
    grid_launch_dependents();
    for (int64_t i = threadIdx.x; i < half; i += blockDim.x)
        table[t * half + i] = rope_cos_sin(pos[t], i, n_rot, freq_base, freq_scale, factors);
}

// grid (n_tokens); writes row n_past + t of the cache. n_past is read from device memory so a
// captured step graph replays at the next position.
__global__ void k_kv_store(const float* src, int64_t width, int f16, void* cache,
                           const int32_t* n_past) {
    const int64_t t = blockIdx.x, row = int64_t(*n_past) + t;
    const float* s = src + t * width;
    for (int64_t i = threadIdx.x; i < width; i += blockDim.x) {
        if (f16)
            static_cast<uint16_t*>(cache)[row * width + i] = f32_to_f16_bits(s[i]);
        else
            static_cast<float*>(cache)[row * width + i] = s[i];
    }
}

__device__ inline float kv_at(const void* cache, int f16, int64_t idx) {
    return f16 ? f16_bits_to_f32(static_cast<const uint16_t*>(cache)[idx])
               : static_cast<const float*>(cache)[idx];
}

// q . K[row off..off+hd) with the query in shared memory; `vec`: the row is 16-byte aligned and
// hd a multiple of 8, so it is read 16 bytes at a time.
__device__ inline float score(const void* kc, int f16, int vec, int64_t off, int64_t hd,
                              const float* qs) {
    float d = 0.0f;
    if (vec && f16) {
        const auto* kp = reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(kc) + off);
        for (int64_t i8 = 0; i8 < hd / 8; ++i8) {
            const uint4 v = kp[i8];
            const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                d += f16_fast(w[k] & 0xffffu) * qs[8 * i8 + 2 * k];
                d += f16_fast(w[k] >> 16) * qs[8 * i8 + 2 * k + 1];
            }
        }
    } else if (vec) {
        const auto* kp = reinterpret_cast<const float4*>(static_cast<const float*>(kc) + off);
        for (int64_t i4 = 0; i4 < hd / 4; ++i4) {
            const float4 v = kp[i4];
            d += v.x * qs[4 * i4];
            d += v.y * qs[4 * i4 + 1];
            d += v.z * qs[4 * i4 + 2];
            d += v.w * qs[4 * i4 + 3];
        }
    } else {
        for (int64_t i = 0; i < hd; ++i) d += kv_at(kc, f16, off + i) * qs[i];
    }
    return d;
}

// Four values of a V row at dims d0..d0+3 (zero past hd); `vec`: 8-byte (f16) / 16-byte (f32)
// aligned and hd a multiple of 4.
__device__ inline void v_four(const void* vc, int f16, int vec, int64_t row, int64_t d0, int64_t hd,
                              float* v) {
    if (vec && f16) {
        const uint2 w =
            *reinterpret_cast<const uint2*>(static_cast<const uint16_t*>(vc) + row + d0);
        v[0] = f16_fast(w.x & 0xffffu), v[1] = f16_fast(w.x >> 16);
        v[2] = f16_fast(w.y & 0xffffu), v[3] = f16_fast(w.y >> 16);
    } else if (vec) {
        const float4 w = *reinterpret_cast<const float4*>(static_cast<const float*>(vc) + row + d0);
        v[0] = w.x, v[1] = w.y, v[2] = w.z, v[3] = w.w;
    } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = d0 + e < hd ? kv_at(vc, f16, row + d0 + e) : 0.0f;
    }
}

// grid (n_tokens * n_head, n_split); block kTile (128 = 4 groups of 32 lanes). With n_split > 1
// (decode), split y takes the y-th of n_split equal runs of the token's keys and writes its
// unnormalised output and (max, sum) to the partial buffers for k_attention_combine; n_split is
// fixed per launch, the runs follow n_past at run time, so a replayed graph stays valid. Per
// tile of 128 keys:
// thread j scores key j; then group g accumulates keys 32g..32g+31 of the tile into its own
// partial output, lane l owning dims 4l..4l+3 of each 128-dim chunk (coalesced V reads, 32 keys
// per thread instead of 128). The four partial outputs are summed at the end.
__global__ void k_attention(const float* q, int64_t n_head, int64_t n_kv_head, int64_t hd,
                            int64_t window, float scale, float softcap, const void* kc,
                            const void* vc, int f16, int kvec, int vvec, const int32_t* n_past,
                            int n_split, float* part_ml, float* part_acc, float* out) {
    constexpr int kGroups = kTile / 32;
    __shared__ float sh[kTile];
    __shared__ float p[kTile];
    __shared__ float qs[kTile * kMaxDimsPerThread];
    __shared__ float part[kGroups][kTile * kMaxDimsPerThread];
    const int64_t t = blockIdx.x / n_head, h = blockIdx.x % n_head;
    const int64_t kvh = h / (n_head / n_kv_head), kv_width = n_kv_head * hd;
    const int64_t pos = int64_t(*n_past) + t;
    const int64_t lo = window > 0 ? (pos - window + 1 > 0 ? pos - window + 1 : 0) : 0;
    int64_t k_lo = lo, k_hi = pos;
    if (n_split > 1) {
        const int64_t chunk = (pos - lo + 1 + n_split - 1) / n_split;
        k_lo = lo + int64_t(blockIdx.y) * chunk;
        k_hi = k_lo + chunk - 1 < pos ? k_lo + chunk - 1 : pos;
    }
    const float* qh = q + (t * n_head + h) * hd;
    const int group = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    for (int64_t i = threadIdx.x; i < hd; i += kTile) qs[i] = qh[i];
    __syncthreads();
    float acc[kMaxDimsPerThread][4];
#pragma unroll
    for (int c = 0; c < kMaxDimsPerThread; ++c)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[c][e] = 0.0f;
    float m_run = -INFINITY, l_run = 0.0f;
    for (int64_t base = k_lo; base <= k_hi; base += kTile) {
        const int64_t j = base + threadIdx.x;
        float s = -INFINITY;
        if (j <= k_hi) {
            s = score(kc, f16, kvec, j * kv_width + kvh * hd, hd, qs) * scale;
            if (softcap > 0) s = softcap * tanhf(s / softcap);
        }
        const float m_new = fmaxf(m_run, block_reduce<kTile, true>(s, sh));
        const float factor = m_run == -INFINITY ? 0.0f : expf(m_run - m_new);
        const float pj = j <= k_hi ? expf(s - m_new) : 0.0f;
        p[threadIdx.x] = pj;
        l_run = l_run * factor + block_reduce<kTile, false>(pj, sh);  // syncs: p[] is complete
        m_run = m_new;
        const int64_t n = (k_hi - base + 1) < kTile ? (k_hi - base + 1) : kTile;
#pragma unroll
        for (int c = 0; c < kMaxDimsPerThread; ++c)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[c][e] *= factor;
        const int64_t j_end = n < 32 * (group + 1) ? n : 32 * (group + 1);
#pragma unroll 4
        for (int64_t jj = 32 * group; jj < j_end; ++jj) {
            const float w = p[jj];
            const int64_t row = (base + jj) * kv_width + kvh * hd;
#pragma unroll
            for (int c = 0; c < kMaxDimsPerThread; ++c) {
                const int64_t d0 = int64_t(c) * kTile + 4 * lane;
                if (d0 >= hd) break;
                float v[4];
                v_four(vc, f16, vvec, row, d0, hd, v);
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[c][e] += w * v[e];
            }
        }
        __syncthreads();  // p[] is rewritten by the next tile
    }
#pragma unroll
    for (int c = 0; c < kMaxDimsPerThread; ++c)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int64_t d = int64_t(c) * kTile + 4 * lane + e;
            if (d < hd) part[group][d] = acc[c][e];
        }
    __syncthreads();
    if (n_split > 1) {
        const int64_t pi = int64_t(blockIdx.x) * n_split + blockIdx.y;
        for (int64_t i = threadIdx.x; i < hd; i += kTile) {
            float sum = 0.0f;
#pragma unroll
            for (int g = 0; g < kGroups; ++g) sum += part[g][i];
            part_acc[pi * hd + i] = sum;
        }
        if (threadIdx.x == 0) part_ml[2 * pi] = m_run, part_ml[2 * pi + 1] = l_run;
        return;
    }
    float* o = out + (t * n_head + h) * hd;
    for (int64_t i = threadIdx.x; i < hd; i += kTile) {
        float sum = 0.0f;
#pragma unroll
        for (int g = 0; g < kGroups; ++g) sum += part[g][i];
        o[i] = sum / l_run;
    }
}

// grid (n_tokens * n_head); block kTile. Merges the n_split partial softmaxes of a (token, head):
// out = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M), M = max_s m_s; empty runs (m_s = -inf)
// weigh nothing. The run holding the token's own position is never empty, so M is finite.
// The weights e^(m_s - M) are computed once per split (shared), then every thread sums its dims
// over the splits with its loads independent. q8 (or null; head_dim % 32 == 0, rows of a
// multiple of 256 values: hip_q8_layout.h): the output is
// also left as q8 activations of the [n_tokens, n_head * head_dim] rows for the next matmul.
__global__ void k_attention_combine(int64_t hd, int n_split, const float* part_ml,
                                    const float* part_acc, float* out, int8_t* q8s, float2* q8d) {
    __shared__ float wt[kMaxSplitsCombined];
    __shared__ float inv_l;
    grid_wait();
    grid_launch_dependents();
    const int64_t r = blockIdx.x;
    const float* ml = part_ml + 2 * r * n_split;
    if (threadIdx.x < 32) {  // one warp (or half a wave64) finds M and L
        float M = -INFINITY;
        for (int s = int(threadIdx.x); s < n_split; s += 32) M = fmaxf(M, ml[2 * s]);
        M = group_max(M);
        float L = 0.0f;
        for (int s = int(threadIdx.x); s < n_split; s += 32) {
            const float e = ml[2 * s] != -INFINITY ? expf(ml[2 * s] - M) : 0.0f;
            wt[s] = e;
            L += ml[2 * s + 1] * e;
        }
        L = group_sum(L);
        if (threadIdx.x == 0) inv_l = 1.0f / L;
    }
    __syncthreads();
    const int64_t n = (hd + kTile - 1) / kTile * kTile;  // every lane of a group reaches q8
    for (int64_t i = threadIdx.x; i < n; i += kTile) {
        float v = 0.0f;
        if (i < hd) {
            const float* a = part_acc + r * n_split * hd + i;
#pragma unroll 8
            for (int s = 0; s < n_split; ++s)
                if (wt[s] != 0.0f) v += a[int64_t(s) * hd] * wt[s];
            v *= inv_l;
            out[r * hd + i] = v;
        }
        if (q8s) q8_store_group(v, r * hd + i, i < hd, q8s, q8d);
    }
}

}  // namespace

// Decode steps (a few tokens, n_head blocks each) split each token's keys over this many blocks
// (k_attention), or over enough splits for about kSplitBlocks blocks of k_attention_split.
constexpr int kDecodeSplits = 8, kMaxDecodeSplits = 32, kSplitBlocks = 256;
constexpr int64_t kDecodeMaxTokens = 8;
static_assert(kMaxDecodeSplits <= kMaxSplitsCombined);

int attention_splits(int64_t n_tokens) {
    return n_tokens <= kDecodeMaxTokens ? kDecodeSplits : 1;
}

// Query heads per k_attention_split block (registers: q and acc are 2 * HB * head_dim / 8).
int split_heads_per_block(int64_t head_dim) {
    return head_dim > 128 ? 2 : 4;
}

// Query heads per k_attention_split_mma block: 4, or with TANDEM_HIP_SPLIT_MMA_HEADS=16 a GQA
// group of up to 16 (each K / V row read once for all of them: fewer blocks, slower at every
// context measured; hip_attention_split_mma.h); read at every launch.
int split_mma_heads_per_block() {
    const char* v = std::getenv("TANDEM_HIP_SPLIT_MMA_HEADS");
    return v && std::atoi(v) == kSplitMmaRows ? kSplitMmaRows : 4;
}

// The split path's partials, after kSplitTickets ticket counters (the front stays put whatever
// the step's shape, so a larger step's partials never land on a smaller one's counters).
uint64_t attention_scratch_floats(int64_t n_tokens, int64_t n_head, int64_t head_dim) {
    return n_tokens <= kDecodeMaxTokens
               ? kSplitTickets +
                     uint64_t(n_tokens * n_head) * kMaxDecodeSplits * uint64_t(head_dim + 2)
               : 0;
}

uint64_t attention_zeroed_floats() {
    return kSplitTickets;
}

// TANDEM_HIP_ATTN_MERGE=0: the splits merged by k_attention_combine (A/B runs and the test
// holding the two ways together); read at every launch.
bool attention_merge_in_split() {
    const char* v = std::getenv("TANDEM_HIP_ATTN_MERGE");
    return !(v && v[0] == '0');
}

// TANDEM_HIP_SPLIT_MMA=0: decode steps with an f16 cache on k_attention_split where the matrix
// units would take them (A/B runs); read at every launch.
bool attention_split_mma_enabled() {
    const char* v = std::getenv("TANDEM_HIP_SPLIT_MMA");
    return !(v && v[0] == '0');
}

// TANDEM_HIP_FLASH=0: prefill on k_attention (one block per token and head) instead of
// k_attention_flash (A/B runs and the test holding the two together); read at every launch.
bool attention_flash_enabled() {
    const char* v = std::getenv("TANDEM_HIP_FLASH");
    return !(v && v[0] == '0');
}

int64_t attention_max_head_dim() {
    return int64_t(kTile) * kMaxDimsPerThread;
}

void launch_rope(const float* x, const int32_t* pos, int64_t n_tokens, int64_t width,
                 int64_t head_dim, int64_t n_rot, bool neox, float freq_base, float freq_scale,
                 const float* factors, float* out, hipStream_t s, void* cache, bool cache_f16,
                 const int32_t* n_past) {
    launch_require(x && pos && out && (!cache || n_past), "rope", "null tensor");
    launch_require(
        head_dim > 0 && width % head_dim == 0 && n_rot > 0 && n_rot % 2 == 0 && n_rot <= head_dim,
        "rope",
        "width " + std::to_string(width) + ", head_dim " + std::to_string(head_dim) + ", n_rot " +
            std::to_string(n_rot) + " (n_rot even, <= head_dim)");
    const int64_t n_head = width / head_dim;
    launch_require(n_tokens >= 0 && n_tokens * n_head <= kMaxGridX, "rope",
                   std::to_string(n_tokens) + " tokens");
    if (n_tokens * n_head <= 0) return;
    hipLaunchKernelGGL(k_rope, dim3(static_cast<unsigned>(n_tokens * n_head)), dim3(64), 0, s, x,
                       pos, n_head, head_dim, n_rot, neox ? 1 : 0, freq_base, freq_scale, factors,
                       out, cache, cache_f16 ? 1 : 0, n_past);
}

void launch_rope_table(const int32_t* pos, int64_t n_tok, int64_t n_rot, float freq_base,
                       float freq_scale, const float* factors, float2* table, hipStream_t s) {
    launch_require(pos && table && n_tok >= 1 && n_tok <= kMaxGridX && n_rot > 0 && n_rot % 2 == 0,
                   "rope table", std::to_string(n_tok) + " tokens, n_rot " + std::to_string(n_rot));
    TANDEM_LAUNCH_OVERLAPPED(k_rope_table, dim3(static_cast<unsigned>(n_tok)), dim3(64), 0, s, pos,
                             n_rot, freq_base, freq_scale, factors, table);
}

void launch_kv_store(const float* src, int64_t n_tokens, int64_t width, bool f16, void* cache,
                     const int32_t* n_past, hipStream_t s) {
    launch_require(src && cache && n_past, "kv_store", "null tensor");
    launch_require(width > 0 && n_tokens >= 0 && n_tokens <= kMaxGridX, "kv_store",
                   "width " + std::to_string(width) + ", " + std::to_string(n_tokens) + " tokens");
    if (n_tokens <= 0) return;
    hipLaunchKernelGGL(k_kv_store, dim3(static_cast<unsigned>(n_tokens)), dim3(256), 0, s, src,
                       width, f16 ? 1 : 0, cache, n_past);
}

bool launch_attention(const float* q, int64_t n_tokens, const int32_t* n_past, int64_t n_head,
                      int64_t n_kv_head, int64_t head_dim, int64_t window, float scale,
                      float softcap, const void* k_cache, const void* v_cache, bool f16,
                      float* scratch, uint64_t scratch_floats, float* out, hipStream_t s, void* q8,
                      bool mma) {
    launch_require(q && k_cache && v_cache && out, "attention", "null tensor");
    launch_require(head_dim > 0 && head_dim <= attention_max_head_dim() && n_kv_head > 0 &&
                       n_head % n_kv_head == 0 && window >= 0 && n_past,
                   "attention",
                   std::to_string(n_head) + " heads, " + std::to_string(n_kv_head) +
                       " KV heads, head_dim " + std::to_string(head_dim));
    launch_require(n_tokens >= 0 && n_tokens * n_head <= kMaxGridX, "attention",
                   std::to_string(n_tokens) + " tokens");
    if (n_tokens * n_head <= 0) return false;
    // 16-byte K rows: every row offset (j * kv_width + kvh * head_dim elements) is a multiple of
    // 8 elements and the cache base is 16-byte aligned; V: 4-element pieces, 8/16-byte aligned.
    const int64_t kv_width = n_kv_head * head_dim;
    const bool kvec =
        head_dim % 8 == 0 && kv_width % 8 == 0 && reinterpret_cast<uintptr_t>(k_cache) % 16 == 0;
    const bool vvec =
        head_dim % 4 == 0 && kv_width % 4 == 0 && reinterpret_cast<uintptr_t>(v_cache) % 16 == 0;
    // Split decode steps when the caller gave room for the partial results.
    const uint64_t need = attention_scratch_floats(n_tokens, n_head, head_dim);
    const bool split = need && scratch && scratch_floats >= need;
    // k_attention_split: head_dim 64 / 128 / 256, 16-byte aligned K and V rows.
    const bool cluster = split && kvec && vvec && reinterpret_cast<uintptr_t>(v_cache) % 16 == 0 &&
                         (head_dim == 64 || head_dim == 128 || head_dim == 256);
    // Decode on the matrix units where the backend's check passed: f16 cache, head_dim 64 / 128,
    // q 16-byte aligned (the kernel is chosen whatever the context: a replayed step graph keeps
    // it as the cache grows).
    const bool split_mma = cluster && mma && f16 && (head_dim == 64 || head_dim == 128) &&
                           reinterpret_cast<uintptr_t>(q) % 16 == 0 &&
                           attention_split_mma_enabled();
    const int64_t hb = split_mma ? split_mma_heads_per_block() : split_heads_per_block(head_dim);
    const int64_t head_blocks = n_kv_head * ((n_head / n_kv_head + hb - 1) / hb);
    int n_split = split ? attention_splits(n_tokens) : 1;
    if (cluster) {
        const int64_t per = kSplitBlocks / (n_tokens * head_blocks);
        n_split = int(per < kDecodeSplits      ? kDecodeSplits
                      : per > kMaxDecodeSplits ? kMaxDecodeSplits
                                               : per);
    }
    int* tickets = split ? reinterpret_cast<int*>(scratch) : nullptr;
    float* part_ml = split ? scratch + kSplitTickets : nullptr;  // [n_tokens * n_head * n_split][2]
    float* part_acc = n_split > 1 ? part_ml + 2 * n_tokens * n_head * n_split : nullptr;
    const bool q8_out =
        q8 && n_split > 1 && head_dim % kQ8Block == 0 && (n_head * head_dim) % kQ8LayoutGroup == 0;
    auto* q8s = q8_out ? static_cast<int8_t*>(q8) : nullptr;
    auto* q8d = q8_out ? reinterpret_cast<float2*>(q8s + n_tokens * n_head * head_dim) : nullptr;
    // The splits merged by the last of them (tickets) or by k_attention_combine.
    const bool merge_in_split = cluster && n_split > 1 && n_split <= kLaneGroup &&
                                n_tokens * head_blocks <= kSplitTickets &&
                                attention_merge_in_split();
    // Prefill (not split): k_attention_flash, 32 query rows of a KV head a block, so each K/V
    // tile is read from memory once for 32 rows where k_attention reads every K/V row once per
    // (token, head) (on the Vulkan backend the same kernel made an 8B 4096-token prefill 30 %
    // faster). head_dim 64 / 128 / 256, 16-byte aligned K and V rows, q and output (float4).
    const bool flash = !split && kvec && vvec &&
                       (head_dim == 64 || head_dim == 128 || head_dim == 256) &&
                       n_kv_head <= kMaxGridY && reinterpret_cast<uintptr_t>(q) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(out) % 16 == 0 && attention_flash_enabled();
    // On the matrix units where the backend's check passed: f16 cache, head_dim 64 / 128.
    const bool on_mma = flash && mma && f16 && (head_dim == 64 || head_dim == 128);
    const int64_t rows = n_tokens * (n_head / n_kv_head);  // per KV head
    if (on_mma) {
        const dim3 grid(static_cast<unsigned>((rows + kAttnMmaRows - 1) / kAttnMmaRows),
                        static_cast<unsigned>(n_kv_head));
        auto go = [&](auto kernel) {
            TANDEM_LAUNCH_OVERLAPPED(kernel, grid, dim3(kAttnMmaThreads), 0, s, q, n_tokens, n_head,
                                     n_kv_head, window, scale, softcap,
                                     static_cast<const uint16_t*>(k_cache),
                                     static_cast<const uint16_t*>(v_cache), n_past, out);
        };
        head_dim == 64 ? go(k_attention_mma<64>) : go(k_attention_mma<128>);
    } else if (flash) {
        const dim3 grid(static_cast<unsigned>((rows + kFlashRows - 1) / kFlashRows),
                        static_cast<unsigned>(n_kv_head));
        auto go = [&](auto kernel) {
            TANDEM_LAUNCH_OVERLAPPED(kernel, grid, dim3(kFlashThreads), 0, s, q, n_tokens, n_head,
                                     n_kv_head, window, scale, softcap, k_cache, v_cache, n_past,
                                     out);
        };
        if (head_dim == 64)
            f16 ? go(k_attention_flash<8, true>) : go(k_attention_flash<8, false>);
        else if (head_dim == 128)
            f16 ? go(k_attention_flash<16, true>) : go(k_attention_flash<16, false>);
        else
            f16 ? go(k_attention_flash<32, true>) : go(k_attention_flash<32, false>);
    } else if (split_mma) {
        const dim3 grid(static_cast<unsigned>(n_split), static_cast<unsigned>(head_blocks),
                        static_cast<unsigned>(n_tokens));
        auto go = [&](auto kernel) {
            TANDEM_LAUNCH_OVERLAPPED(kernel, grid, dim3(kSplitThreads), 0, s, q, n_head, n_kv_head,
                                     window, scale, softcap, static_cast<const uint16_t*>(k_cache),
                                     static_cast<const uint16_t*>(v_cache), n_past, part_ml,
                                     part_acc, merge_in_split ? tickets : nullptr, out, q8s, q8d);
        };
        if (hb == kSplitMmaRows)
            head_dim == 64 ? go(k_attention_split_mma<64, kSplitMmaRows>)
                           : go(k_attention_split_mma<128, kSplitMmaRows>);
        else
            head_dim == 64 ? go(k_attention_split_mma<64, 4>) : go(k_attention_split_mma<128, 4>);
    } else if (cluster) {
        const dim3 grid(static_cast<unsigned>(n_split), static_cast<unsigned>(head_blocks),
                        static_cast<unsigned>(n_tokens));
        auto go = [&](auto kernel) {
            TANDEM_LAUNCH_OVERLAPPED(kernel, grid, dim3(kSplitThreads), 0, s, q, n_head, n_kv_head,
                                     window, scale, softcap, k_cache, v_cache, n_past, part_ml,
                                     part_acc, merge_in_split ? tickets : nullptr, out, q8s, q8d);
        };
        if (head_dim == 64)
            f16 ? go(k_attention_split<8, 4, true>) : go(k_attention_split<8, 4, false>);
        else if (head_dim == 128)
            f16 ? go(k_attention_split<16, 4, true>) : go(k_attention_split<16, 4, false>);
        else
            f16 ? go(k_attention_split<32, 2, true>) : go(k_attention_split<32, 2, false>);
    } else {
        const dim3 grid(static_cast<unsigned>(n_tokens * n_head), static_cast<unsigned>(n_split));
        hipLaunchKernelGGL(k_attention, grid, dim3(kTile), 0, s, q, n_head, n_kv_head, head_dim,
                           window, scale, softcap, k_cache, v_cache, f16 ? 1 : 0, kvec ? 1 : 0,
                           vvec ? 1 : 0, n_past, n_split, part_ml, part_acc, out);
    }
    if (n_split > 1 && !merge_in_split) {
        TANDEM_LAUNCH_OVERLAPPED(k_attention_combine,
                                 dim3(static_cast<unsigned>(n_tokens * n_head)), dim3(kTile), 0, s,
                                 head_dim, n_split, part_ml, part_acc, out, q8s, q8d);
    }
    return q8_out;
}

}  // namespace tandem::hip
