// Qwen3's and Gemma 3's attention inputs in one decode launch (match_qk_norm_rope): each head of
// q and k normed (RMSNorm over head_dim with its weights), roped, and q written, k stored into
// the K cache; each head of v stored into the V cache. In place of five launches (two norms, two
// ropes, a store), every one waiting on the one before.
// One block of the step's one token: every head of q, k and v is read into shared memory before
// anything is written, so the roped q may take memory q or k held (the planner gives it theirs
// once the norms have read them). Then lane group (warp) w takes heads w, w + 32, ... of q and
// k. A head's sum of squares is formed as k_rms_norm4 forms it at head_dim <= 128 (a float4 a
// lane of the first 32, its four register slots, the 32-lane sum, then its warps' sums in
// order), its rotation from the step's (cos, sin) table as launch_rope computes the angles: the
// same bits as the separate launches.
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdint>

#include "hip_decode.h"
#include "hip_launch_overlap.h"
#include "hip_ops.h"
#include "hip_rope.h"

namespace tandem::hip {
namespace {

constexpr int kThreads = 1024;
constexpr int kGroups = kThreads / kLaneGroup;
constexpr int64_t kMaxFloats = 12288;  // 48 KB of shared memory: a token's q, k and v
constexpr int kNormSlots = 4;          // k_rms_norm4's float4 registers a thread (kNormRegs)
constexpr int kNormGroups = 8;         // and its block's lane groups (256 threads)

__device__ inline void put4(void* cache, bool f16, int64_t at, float4 v) {
    if (f16) {
        auto* c = static_cast<uint16_t*>(cache) + at;
        c[0] = f32_to_f16_bits(v.x), c[1] = f32_to_f16_bits(v.y);
        c[2] = f32_to_f16_bits(v.z), c[3] = f32_to_f16_bits(v.w);
    } else {
        *reinterpret_cast<float4*>(static_cast<float*>(cache) + at) = v;
    }
}

__global__ void __launch_bounds__(kThreads) k_qk_norm_rope(QkNormRope a) {
    extern __shared__ float4 sh[];  // [q | k | v] of the token
    __shared__ float part[kGroups][kNormGroups];
    const int tid = int(threadIdx.x), g = tid / kLaneGroup, lane = tid % kLaneGroup;
    const int64_t hd = a.head_dim, h4 = hd / 4, nq4 = a.n_head * h4, nk4 = a.n_kv_head * h4;
    const auto* q4 = reinterpret_cast<const float4*>(a.q);
    const auto* k4 = reinterpret_cast<const float4*>(a.k);
    const auto* v4 = reinterpret_cast<const float4*>(a.v);
    grid_wait();
    grid_launch_dependents();
    for (int64_t i = tid; i < nq4 + 2 * nk4; i += kThreads)
        sh[i] = i < nq4 ? q4[i] : i < nq4 + nk4 ? k4[i - nq4] : v4[i - nq4 - nk4];
    const int64_t row = *a.n_past;  // the cache row of the token
    __syncthreads();
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f), one = make_float4(1, 1, 1, 1);
    const int64_t heads = a.n_head + a.n_kv_head;
    for (int64_t base = 0; base < heads; base += kGroups) {  // uniform: barriers inside
        const int64_t h = base + g;
        const bool is_q = h < a.n_head, live_head = h < heads;
        float4* head = sh + (is_q ? h * h4 : nq4 + (h - a.n_head) * h4);
        const float* w = is_q ? a.q_w : a.k_w;
        float4 v[kNormSlots];
#pragma unroll
        for (int k = 0; k < kNormSlots; ++k) {
            const int64_t i = lane + int64_t(k) * kNormGroups * kLaneGroup;
            v[k] = live_head && i < h4 ? head[i] : zero;
        }
        const float4 m =
            w && live_head && lane < h4 ? reinterpret_cast<const float4*>(w)[lane] : one;
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < kNormSlots; ++k) ss += sq4(v[k]);
        ss = group_sum(ss);
        if (lane == 0) {
            part[g][0] = ss;
            for (int i = 1; i < kNormGroups; ++i) part[g][i] = 0.0f;  // its other lane groups'
        }
        __syncthreads();
        float total = 0.0f;
#pragma unroll
        for (int i = 0; i < kNormGroups; ++i) total += part[g][i];
        const float s = rsqrtf(total / float(hd) + a.eps);
        const float4 n =
            make_float4(v[0].x * s * m.x, v[0].y * s * m.y, v[0].z * s * m.z, v[0].w * s * m.w);
        if (live_head && lane < h4) head[lane] = n;
        __syncthreads();
        if (!live_head || lane >= h4) continue;
        const auto* e0 = reinterpret_cast<const float*>(head);
        const int64_t half = hd / 2;
        float r[4];
        for (int j = 0; j < 4; ++j) {
            const int64_t e = 4 * int64_t(lane) + j;
            const int64_t i = a.neox ? e % half : e / 2;
            const bool second = a.neox ? e >= half : (e & 1) != 0;
            const int64_t pe = a.neox ? (second ? e - half : e + half) : (e ^ 1);
            const float2 cs = a.cs[i];
            r[j] = second ? rope_rotate(e0[pe], e0[e], cs, true)
                          : rope_rotate(e0[e], e0[pe], cs, false);
        }
        const float4 out = make_float4(r[0], r[1], r[2], r[3]);
        if (is_q)
            reinterpret_cast<float4*>(a.q_out)[h * h4 + lane] = out;
        else
            put4(a.k_cache, a.cache_f16, (row * a.n_kv_head + h - a.n_head) * hd + 4 * lane, out);
    }
    for (int64_t i = tid; i < nk4; i += kThreads)
        put4(a.v_cache, a.cache_f16, row * a.n_kv_head * hd + 4 * i, sh[nq4 + nk4 + i]);
}

}  // namespace

bool launch_qk_norm_rope(const QkNormRope& a, hipStream_t s) {
    const auto a16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    const int64_t floats = (a.n_head + 2 * a.n_kv_head) * a.head_dim;
    if (!a.q || !a.k || !a.v || !a.cs || !a.n_past || !a.q_out || !a.k_cache || !a.v_cache ||
        (a.head_dim != 64 && a.head_dim != 128) || a.n_tok != 1 || a.n_head < 1 ||
        a.n_kv_head < 1 || floats > kMaxFloats || !a16(a.q) || !a16(a.k) || !a16(a.v) ||
        !a16(a.q_out) || (a.q_w && !a16(a.q_w)) || (a.k_w && !a16(a.k_w)) ||
        (!a.cache_f16 && (!a16(a.k_cache) || !a16(a.v_cache))))
        return false;
    TANDEM_LAUNCH_OVERLAPPED(k_qk_norm_rope, dim3(1), dim3(kThreads),
                             static_cast<size_t>(floats) * sizeof(float), s, a);
    return true;
}

}  // namespace tandem::hip
