#pragma once
// Prefill attention on the matrix units (hip_mma.h; the Vulkan backend's
// attention_flash_coopmat.comp): k_attention_flash's tiling, a block taking 64 query rows of one
// KV head (row = (token t, query head g of the GQA group), r = t * group + g) and reading each
// tile of 32 cached positions once for all of them, with both products, S = Q K^T and
// O += P V, on 16 x 16 x 16 f16 fragments. 128 threads: 4 waves of 16 rows (wave32) or 2 of 32
// (wave64). Each wave keeps its q as A fragments and its output as head_dim / 16 accumulators
// per 16 rows, in registers. Per tile: K rows go to shared memory as they are in the cache
// (f16), V transposed (so both products read k-contiguous rows); the waves store S to shared
// memory; two threads a row take the online softmax there (the causal / window mask, softcap,
// the row's max, P as f16, the factor its accumulators are rescaled by); the accumulators'
// elements are scaled in registers (mma_acc_m names each one's row). f16 K/V cache only; q and
// P are rounded to f16, the sums stay f32. head_dim 64 or 128; 16-byte aligned cache rows, q.
#include <cstdint>

#include "hip_decode.h"
#include "hip_launch_overlap.h"
#include "hip_mma.h"

namespace tandem::hip {

inline constexpr int kAttnMmaThreads = 128, kAttnMmaRows = 64;

// grid (ceil(n_tokens * group / 64), n_kv_head), block kAttnMmaThreads. n_past is read from
// device memory, so a replayed step graph attends at the new position.
template <int HD>
__global__ void __launch_bounds__(kAttnMmaThreads)
    k_attention_mma(const float* q, int64_t n_tokens, int64_t n_head, int64_t n_kv_head,
                    int64_t window, float scale, float softcap, const uint16_t* kc,
                    const uint16_t* vc, const int32_t* n_past, float* out) {
    grid_wait();
    grid_launch_dependents();
#if TANDEM_MMA_KIND != 0
    constexpr int BC = 32, ROWS = kAttnMmaRows, HF = HD / 16;
    constexpr int RF = kMmaWave / 32;          // 16-row fragments a wave
    constexpr int LDK = HD + 8, LDV = BC + 8;  // halves a q / K row, a V^T row (16-byte multiples)
    constexpr int LDS = BC + 4, LDP = BC + 8;  // floats an S row, halves a P row
    constexpr int kKvHalves = BC * LDK + HD * LDV, kQHalves = ROWS * LDK;
    static_assert(HD % 16 == 0 && kAttnMmaThreads / kMmaWave * 16 * RF == ROWS);
    // q first (read into registers once), then each tile's K rows and V^T.
    __shared__ __align__(16) uint16_t kv[kKvHalves > kQHalves ? kKvHalves : kQHalves];
    __shared__ float ss[ROWS * LDS];                   // S of the tile, [row][position]
    __shared__ __align__(16) uint16_t sp[ROWS * LDP];  // P (f16), [row][position]
    __shared__ float sf[ROWS];                         // per-row factor, then 1 / l
    uint16_t* const ks = kv;
    uint16_t* const vt = kv + BC * LDK;
    const int tid = int(threadIdx.x), wave = tid / kMmaWave, lane = tid % kMmaWave;
    const int wr = wave * 16 * RF;  // the wave's first row in the block
    const int64_t group = n_head / n_kv_head, kvh = blockIdx.y;
    const int64_t r0 = int64_t(blockIdx.x) * ROWS;
    const int64_t np = *n_past;
    const int64_t t_first = r0 / group;
    const int64_t t_last =
        (r0 + ROWS - 1) / group < n_tokens - 1 ? (r0 + ROWS - 1) / group : n_tokens - 1;
    const int64_t hi = np + t_last;  // the last position any row of the block sees
    const int64_t lo = window > 0 && np + t_first + 1 > window ? np + t_first + 1 - window : 0;
    const int64_t kv_width = n_kv_head * HD;
    // Softmax threads: row sr, positions 16 * half .. + 15 of the tile.
    const int sr = tid / 2, half = tid % 2;
    const int64_t my_t = (r0 + sr) / group, my_pos = np + my_t;
    const bool my_live = my_t < n_tokens;
    const int64_t my_lo = window > 0 && my_pos + 1 > window ? my_pos + 1 - window : 0;

    for (int e = tid; e < ROWS * HD / 8; e += kAttnMmaThreads) {
        const int rr = e / (HD / 8), c = e % (HD / 8);
        const int64_t t = (r0 + rr) / group, h = kvh * group + (r0 + rr) % group;
        uint4 w = make_uint4(0u, 0u, 0u, 0u);
        if (t < n_tokens) {
            const auto* p = reinterpret_cast<const float4*>(q + (t * n_head + h) * HD + 8 * c);
            const float4 a = p[0], b = p[1];
            const float v[8] = {a.x * scale, a.y * scale, a.z * scale, a.w * scale,
                                b.x * scale, b.y * scale, b.z * scale, b.w * scale};
            w = pack8_half(v);
        }
        *reinterpret_cast<uint4*>(kv + rr * LDK + 8 * c) = w;
    }
    __syncthreads();
    MmaA qa[RF][HF];
    MmaAcc o[RF][HF];
#pragma unroll
    for (int f = 0; f < RF; ++f)
#pragma unroll
        for (int i = 0; i < HF; ++i) {
            mma_load_a(qa[f][i], kv + (wr + 16 * f) * LDK + 16 * i, LDK, lane);
            mma_zero(o[f][i]);
        }
    float m = -1e30f, l = 0.0f;  // the softmax row's running max and sum
    __syncthreads();             // q read before the tiles overwrite it

    for (int64_t base = lo; base <= hi; base += BC) {
        // K rows as they are (8 halves a thread, a row's pieces side by side); V transposed
        // (a warp's threads on 32 positions of one piece, so the 2-byte stores of a dim's row
        // are adjacent). Positions past hi: zeros.
        for (int e = tid; e < BC * HD / 8; e += kAttnMmaThreads) {
            const int j = e / (HD / 8), c = e % (HD / 8);
            uint4 w = make_uint4(0u, 0u, 0u, 0u);
            if (base + j <= hi)
                w = reinterpret_cast<const uint4*>(kc)[((base + j) * kv_width + kvh * HD) / 8 + c];
            *reinterpret_cast<uint4*>(ks + j * LDK + 8 * c) = w;
        }
        for (int e = tid; e < BC * HD / 8; e += kAttnMmaThreads) {
            const int j = e % BC, c = e / BC;
            uint4 w = make_uint4(0u, 0u, 0u, 0u);
            if (base + j <= hi)
                w = reinterpret_cast<const uint4*>(vc)[((base + j) * kv_width + kvh * HD) / 8 + c];
            const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                vt[(8 * c + 2 * i) * LDV + j] = uint16_t(words[i] & 0xffffu);
                vt[(8 * c + 2 * i + 1) * LDV + j] = uint16_t(words[i] >> 16);
            }
        }
        __syncthreads();
        // Every wave runs every tile (the barriers stay uniform); rows that do not see a
        // position get weight 0 from the mask below.
#pragma unroll
        for (int f = 0; f < RF; ++f) {
            MmaAcc s[2];
            mma_zero(s[0]);
            mma_zero(s[1]);
#pragma unroll
            for (int i = 0; i < HF; ++i)
#pragma unroll
                for (int n = 0; n < 2; ++n) {
                    MmaB kb;  // B(d, j) = K[16n + j][16i + d]: the K rows are [n][k]
                    mma_load_b(kb, ks + 16 * n * LDK + 16 * i, LDK, lane);
                    mma_run(s[n], qa[f][i], kb);
                }
#pragma unroll
            for (int n = 0; n < 2; ++n)
#pragma unroll
                for (int e = 0; e < kMmaAccItems; ++e)
                    ss[(wr + 16 * f + mma_acc_m(lane, e)) * LDS + 16 * n + mma_acc_n(lane, e)] =
                        s[n].v[e];
        }
        __syncthreads();
        {
            float sv[16], mx = -1e30f;
#pragma unroll
            for (int j = 0; j < 16; ++j) {
                const int64_t ps = base + 16 * half + j;
                float d = ss[sr * LDS + 16 * half + j];
                if (softcap > 0) d = softcap * tanhf(d / softcap);
                sv[j] = my_live && ps >= my_lo && ps <= my_pos ? d : -1e30f;
                mx = fmaxf(mx, sv[j]);
            }
            mx = fmaxf(mx, lane_xor(mx, 1, 2));
            const float m_new = fmaxf(m, mx), fac = expf(m - m_new);
            float sum = 0.0f, p[16];
#pragma unroll
            for (int j = 0; j < 16; ++j) {
                p[j] = sv[j] > -1e30f ? expf(sv[j] - m_new) : 0.0f;
                sum += p[j];
            }
            sum += lane_xor(sum, 1, 2);
            l = l * fac + sum;
            m = m_new;
            *reinterpret_cast<uint4*>(sp + sr * LDP + 16 * half) = pack8_half(p);
            *reinterpret_cast<uint4*>(sp + sr * LDP + 16 * half + 8) = pack8_half(p + 8);
            if (half == 0) sf[sr] = fac;
        }
        __syncthreads();
#pragma unroll
        for (int f = 0; f < RF; ++f) {
#pragma unroll
            for (int i = 0; i < HF; ++i)
#pragma unroll
                for (int e = 0; e < kMmaAccItems; ++e)
                    o[f][i].v[e] *= sf[wr + 16 * f + mma_acc_m(lane, e)];
#pragma unroll
            for (int n = 0; n < 2; ++n) {
                MmaA pa;  // P[row][16n + j]
                mma_load_a(pa, sp + (wr + 16 * f) * LDP + 16 * n, LDP, lane);
#pragma unroll
                for (int i = 0; i < HF; ++i) {
                    MmaB vb;  // B(j, d) = V[16n + j][16i + d]: V^T rows are [d][position]
                    mma_load_b(vb, vt + 16 * i * LDV + 16 * n, LDV, lane);
                    mma_run(o[f][i], pa, vb);
                }
            }
        }
        __syncthreads();  // the tile is rewritten next
    }
    if (half == 0) sf[sr] = my_live ? 1.0f / l : 0.0f;  // the row's own position: l > 0
    __syncthreads();
#pragma unroll
    for (int f = 0; f < RF; ++f)
#pragma unroll
        for (int i = 0; i < HF; ++i)
#pragma unroll
            for (int e = 0; e < kMmaAccItems; ++e) {
                const int rr = wr + 16 * f + mma_acc_m(lane, e);
                const int64_t t = (r0 + rr) / group;
                if (t >= n_tokens) continue;
                const int64_t h = kvh * group + (r0 + rr) % group;
                out[(t * n_head + h) * HD + 16 * i + mma_acc_n(lane, e)] = o[f][i].v[e] * sf[rr];
            }
#endif
}

}  // namespace tandem::hip
