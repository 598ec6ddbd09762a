// Persistent decode-layer lab for NVIDIA GPUs (a measuring tool, not part of the product): can
// one kernel that runs a whole decode step, its blocks streaming their weights ahead across the
// stage boundaries, reach issue #5's 85 % of the copy bandwidth where a dispatch per stage does
// not (sessions 12-18: 0.40-0.57 at 8B on Vulkan, 0.46-0.68 on HIP)? Session 19's numbers and
// what they say are in docs/hip.md ("Session 19").
//
// The layer is llama-3.1-8b's chain of matvecs in repacked Q4_0 (groups of 256 weights of one
// row: [8 f16 scales][8 x 16 quant bytes], 144 bytes) over q8 activations:
//   stage 0: q/k/v   [6144, 4096]  input rms_norm(h)               -> qkv
//   stage 1: o       [4096, 4096]  input qkv[0:4096] (in the attention's place) -> h +=
//   stage 2: gate/up [28672, 4096] input rms_norm(h), rows gate/up interleaved -> silu(g) * u
//   stage 3: down    [4096, 14336] input the gated activation       -> h +=
// Left out: the attention (its KV bytes are ~1-2 % of a layer's at short context), rope, the
// norms' weights, the logits.
//
// One block per SM streams its weights through a ring of S shared-memory slots of whole rows
// and consumes a slot while the next ones are in flight; at a stage boundary it writes its rows,
// waits for the stage to be complete everywhere and quantises the next stage's input into
// shared memory, while its next weights keep arriving. Kernels (same consume code):
//   k_persistent  512 threads, fixed row ranges, a grid barrier per stage; its thread 0 issues
//                 the next slot between two __syncthreads (cp.async 16 bytes a thread, or one
//                 bulk copy);
//   k_ws          + a producer warp issuing bulk copies (TMA) on full / empty mbarriers, no
//                 block-wide barrier per slot;
//   k_dyn         + chunks of rows claimed from per-stage counters (no fixed ranges, no grid
//                 barrier: a stage waits for the count of the stage before);
//   k_ll          k_ws with flag-in-data outputs: (value, flag) 8-byte stores, the readers poll
//                 the values themselves (no fence, no counter);
//   k_ws<S, Skip> measuring bounds with the barrier, or the barrier and the input preparation,
//                 left out (wrong results); k_ws<.., Cl> in thread-block clusters of Cl that
//                 share the input's fetch and quantising (distributed shared memory).
// Each timed as "persistent" (all stages of all layers in one launch) and "per-stage" (a launch
// per stage in a CUDA graph: kernel boundaries in place of the barrier, the ring refilled from
// empty), next to the device's copy rate (cudaMemcpy D2D, read + written, as `tandem-cli bench`)
// and a read-only kernel. Every variant's h after 2 layers is checked against a reference (one
// thread per row, double sums, its own quantiser). Per-phase cycles (thread 0 of each block)
// show where a layer's time goes.
//
// Build (nvcc 12+, sm_90: bulk copies and mbarriers): nvcc -O3 -std=c++20 \
//   -gencode arch=compute_90,code=sm_90 packaging/gpu/layer_lab.cu -o layer-lab
// Run: layer-lab [layers = 32] [variants = cdegfj: letters, listed at the end of main()]
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "lab_rates.cuh"

constexpr int kDim = 4096, kFf = 14336, kQkv = 6144;
constexpr int kStages = 4;
constexpr int kGroupBytes = 144;                           // 256 weights of one row
constexpr int kSlotBytes = 16 * 4096 / 256 * kGroupBytes;  // 36864: 16 rows of 4096 inputs
constexpr int kRowsAWarp = 4;                              // rows a warp takes of a slot (consume)
constexpr int kThreads = 512;
constexpr uint32_t M4 = 0x0F0F0F0Fu;

__host__ __device__ inline int stage_in(int s) {
    return s == 3 ? kFf : kDim;
}
__host__ __device__ inline int stage_out(int s) {
    return s == 0 ? kQkv : s == 2 ? 2 * kFf : kDim;
}
__host__ __device__ inline int64_t stage_row_bytes(int s) {
    return int64_t(stage_in(s)) / 256 * kGroupBytes;
}
// A slot holds whole rows (16 of 4096 inputs, 4 of 14336: 4 for each set of warps that
// covers a row), so that a warp's 32 lanes take 32 blocks of one row: a row's sum is warp
// sums stored side by side, no shared atomics (a first version added each group's sum to its
// row with shared-memory float atomics: ~150 us a layer in them).
__host__ __device__ inline int slot_rows(int s) {
    return kRowsAWarp * (kThreads / 32 / (stage_in(s) / 1024));  // 16 of 4096 inputs, 4 of 14336
}

struct Params {
    const uint8_t* const* w;     // [layers * 4] the matrices
    int stage_begin, stage_end;  // global stage index = layer * 4 + s
    float* h;                    // [kDim] the residual stream
    float* qkv;                  // [kQkv]
    float* gu;                   // [2 * kFf]
    unsigned* bar;               // grid barrier counter (0 at launch)
    unsigned long long* prof;    // [blocks][5] cycles: prepare, barrier, slot wait, consume, issue
    unsigned* claim;             // k_dyn: [global stage] chunks claimed
    unsigned* done;              // k_dyn: [global stage] chunks finished
    uint2* h_ll;                 // k_ll: (value bits, flag) pairs: the residual stream,
    uint2* qkv_ll;               //   q/k/v and the gated activation
    uint2* act_ll;
};

// ---- the persistent kernel ------------------------------------------------------------------

__device__ inline void cp_async16(void* smem, const void* gmem) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ inline void cp_commit() {
    asm volatile("cp.async.commit_group;\n");
}
template <int N>
__device__ inline void cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
// The bulk copy engine (TMA, sm_90): one thread asks for a whole contiguous slot; the slot's
// mbarrier completes when its bytes have landed.
__device__ inline unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ inline void bulk_load(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)),
                 "r"(bytes));
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
        "[%3];\n" ::"r"(smem_addr(dst)),
        "l"(src), "r"(bytes), "r"(smem_addr(bar))
        : "memory");
}
__device__ inline void mbar_wait(uint64_t* bar, unsigned parity) {
    asm volatile(
        "{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared.b64 p, [%0], %1;\n"
        " @!p bra W;\n}\n" ::"r"(smem_addr(bar)),
        "r"(parity)
        : "memory");
}

__device__ inline unsigned ld_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p));
    return v;
}

// The 512 consumer threads (named barrier 1; the warp-specialised kernel's producer warp is
// not in it).
__device__ inline void csync() {
    asm volatile("bar.sync 1, %0;\n" ::"n"(kThreads) : "memory");
}
__device__ inline void mbar_init_n(uint64_t* bar, unsigned n) {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(n));
}
__device__ inline void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

// Every block of the grid; target = blocks * (barriers so far, this one included). Mode 0: a
// fence, an atomic add and acquire polls; 1: the same polls 64 ns apart (132 pollers on the
// counter's line slow the adds); 2: a release add that returns nothing and relaxed polls 64 ns
// apart, one acquire fence after.
template <int Mode = 0>
__device__ inline void grid_barrier(unsigned* bar, unsigned target) {
    csync();
    if (threadIdx.x == 0) {
        if (Mode < 2) {
            __threadfence();
            atomicAdd(bar, 1u);
            while (ld_acquire(bar) < target) {
                if (Mode == 1) __nanosleep(64);
            }
            __threadfence();
        } else {
            asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(bar) : "memory");
            unsigned v;
            for (;;) {
                asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(bar));
                if (v >= target) break;
                __nanosleep(64);
            }
            asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
        }
    }
    csync();
}

__device__ inline int minus8(uint32_t v) {
    return int((v + 0x78787878u) ^ 0x80808080u);
}

// Gate / up rows are interleaved (row 2i gate i, 2i + 1 up i) and split in pairs, so the block
// that sums them writes silu(gate) * up itself.
__device__ inline void row_range(int s, int& r0, int& r1) {
    const int unit = s == 2 ? 2 : 1, n = stage_out(s) / unit;
    r0 = unit * int(int64_t(n) * blockIdx.x / gridDim.x);
    r1 = unit * int(int64_t(n) * (blockIdx.x + 1) / gridDim.x);
}

// A block's cursor over its weight stream: the global stage, the block's rows of it and the
// next slot's first row. Set when the cursor enters a stage, so that a slot costs no division
// (a first version divided 64-bit offsets per slot in every thread: 30-40 us a layer).
struct Cursor {
    int gs, s, rows, row;  // row: the next slot's first, counted from the block's first
    int rb, per_slot;      // row bytes, rows a slot
    const uint8_t* base;   // the block's first row
};
__device__ inline void enter(const Params& p, Cursor& c, int gs) {
    c.gs = gs;
    c.row = 0;
    if (gs >= p.stage_end) return;
    c.s = gs % kStages;
    int r0, r1;
    row_range(c.s, r0, r1);
    c.rows = r1 - r0;
    c.rb = int(stage_row_bytes(c.s));
    c.per_slot = slot_rows(c.s);
    c.base = p.w[gs] + int64_t(r0) * c.rb;
}
__device__ inline int slot_rows_left(const Cursor& c) {
    return min(c.per_slot, c.rows - c.row);
}
__device__ inline void advance(const Params& p, Cursor& c) {
    c.row += c.per_slot;
    if (c.row >= c.rows) enter(p, c, c.gs + 1);
}

// Issues the slot at cursor c into ring slot dst (nothing past the stream's end) and advances
// c. cp.async: every thread, 16 bytes at a time, always one group committed so that the wait
// counts stay uniform; Bulk: thread 0, one bulk copy completing on bar.
template <bool Bulk>
__device__ inline void issue(const Params& p, Cursor& c, uint8_t* dst, uint64_t* bar) {
    if (c.gs < p.stage_end) {
        const int bytes = slot_rows_left(c) * c.rb;
        const uint8_t* src = c.base + int64_t(c.row) * c.rb;
        if (Bulk) {
            if (threadIdx.x == 0) bulk_load(dst, src, unsigned(bytes), bar);
        } else {
            for (int i = threadIdx.x; i < bytes / 16; i += kThreads)
                cp_async16(dst + 16 * i, src + 16 * i);
        }
        advance(p, c);
    }
    if (!Bulk) cp_commit();
}

struct Smem {
    int8_t* xq;   // [n_in] the stage's input, q8
    float2* xds;  // [n_in / 32] (scale, scale * sum of the block's q)
    float* acc;   // [rows of this block][parts] the warps' sums (consume)
    float* red;   // [32] reductions
};

__device__ inline float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// The stage's input quantised into shared memory. Every thread asks for all its values (up to
// 7 float4 of 14336) before it uses any: one L2 round trip a stage, not one per 32-value block.
// A q8 block is 8 lanes' float4s.
constexpr int kPrepVec = kFf / 4 / kThreads;  // 7
__device__ void quantise(int s, float4 (&v)[kPrepVec], Smem& m);
__device__ void prepare(const Params& p, int s, Smem& m) {
    const int n4 = stage_in(s) / 4;
    float4 v[kPrepVec];
#pragma unroll
    for (int k = 0; k < kPrepVec; ++k) {
        const int f = threadIdx.x + k * kThreads;
        if (f >= n4) break;
        if (s == 0 || s == 2) {
            v[k] = __ldcg(reinterpret_cast<const float4*>(p.h) + f);
        } else if (s == 1) {
            v[k] = __ldcg(reinterpret_cast<const float4*>(p.qkv) + f);
        } else {
            v[k] = __ldcg(reinterpret_cast<const float4*>(p.gu) + f);  // the gated activation
        }
    }
    quantise(s, v, m);
}

// Flag-in-data inputs (k_ll): every value travels as an 8-byte (value, flag) store, which lands
// whole, so a reader knows a value is this stage's by its flag: no fence, no counter, no
// barrier; waiting for the stage and fetching its output are one trip through L2.
__device__ inline ulonglong2 ld_volatile2(const unsigned long long* p) {
    ulonglong2 v;
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];\n" : "=l"(v.x), "=l"(v.y) : "l"(p));
    return v;
}
__device__ inline void st_volatile_pair(uint2* p, float v, unsigned flag) {
    asm volatile("st.volatile.global.v2.u32 [%0], {%1, %2};\n" ::"l"(p), "r"(__float_as_uint(v)),
                 "r"(flag)
                 : "memory");
}
// 4 pairs (float4 f of the input); true when all carry `flag`.
__device__ inline bool load_ll4(const uint2* base, int f, unsigned flag, float4& out) {
    const unsigned long long* q = reinterpret_cast<const unsigned long long*>(base) + 4 * f;
    const ulonglong2 a = ld_volatile2(q), b = ld_volatile2(q + 2);
    out = make_float4(__uint_as_float(unsigned(a.x)), __uint_as_float(unsigned(a.y)),
                      __uint_as_float(unsigned(b.x)), __uint_as_float(unsigned(b.y)));
    return unsigned(a.x >> 32) == flag && unsigned(a.y >> 32) == flag &&
           unsigned(b.x >> 32) == flag && unsigned(b.y >> 32) == flag;
}
// Waits for the stage's input (flag = the global stage: what the stage before wrote, or 0 for
// the launch's initial h) and quantises it. All loads are issued before any is checked; only
// the values not yet there are asked for again.
__device__ void prepare_ll(const Params& p, int s, unsigned flag, Smem& m, unsigned sleep_ns) {
    const int n4 = stage_in(s) / 4;
    const uint2* src = s == 0 || s == 2 ? p.h_ll : s == 1 ? p.qkv_ll : p.act_ll;
    float4 v[kPrepVec];
    unsigned missing = 0;
#pragma unroll
    for (int k = 0; k < kPrepVec; ++k) {
        const int f = threadIdx.x + k * kThreads;
        if (f >= n4) break;
        if (!load_ll4(src, f, flag, v[k])) missing |= 1u << k;
    }
    while (missing) {
        if (sleep_ns) __nanosleep(sleep_ns);  // 512 threads x 132 blocks re-reading the input
#pragma unroll
        for (int k = 0; k < kPrepVec; ++k)
            if (missing & (1u << k))
                if (load_ll4(src, threadIdx.x + k * kThreads, flag, v[k])) missing &= ~(1u << k);
    }
    quantise(s, v, m);
}

// 4 values of a q8 block whose 32 values are the float4s of 8 adjacent lanes: their int8s as
// one word, and the block's (scale, scale * sum of its ints) in ds.
__device__ inline uint32_t quantise4(const float4& v, float2& ds) {
    float amax = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 4));
    const float d = amax / 127.0f;
    const int q0 = d > 0 ? int(rintf(v.x / d)) : 0, q1 = d > 0 ? int(rintf(v.y / d)) : 0;
    const int q2 = d > 0 ? int(rintf(v.z / d)) : 0, q3 = d > 0 ? int(rintf(v.w / d)) : 0;
    int sum = q0 + q1 + q2 + q3;
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    sum += __shfl_xor_sync(0xffffffffu, sum, 4);
    ds = make_float2(d, d * float(sum));
    return uint32_t(q0 & 255) | uint32_t(q1 & 255) << 8 | uint32_t(q2 & 255) << 16 |
           uint32_t(q3 & 255) << 24;
}
__device__ void quantise(int s, float4 (&v)[kPrepVec], Smem& m) {
    const int n4 = stage_in(s) / 4, lane = threadIdx.x % 32, wp = threadIdx.x / 32;
    if (s == 0 || s == 2) {
        float ss = 0;
#pragma unroll
        for (int k = 0; k < kPrepVec; ++k)
            if (threadIdx.x + k * kThreads < n4)
                ss += v[k].x * v[k].x + v[k].y * v[k].y + v[k].z * v[k].z + v[k].w * v[k].w;
        ss = warp_sum(ss);
        if (lane == 0) m.red[wp] = ss;
        csync();
        float t = lane < kThreads / 32 ? m.red[lane] : 0.0f;
        t = warp_sum(t);
        const float norm = rsqrtf(t / float(4 * n4) + 1e-5f);
        csync();  // red[] free again
#pragma unroll
        for (int k = 0; k < kPrepVec; ++k)
            v[k] = make_float4(v[k].x * norm, v[k].y * norm, v[k].z * norm, v[k].w * norm);
    }
#pragma unroll
    for (int k = 0; k < kPrepVec; ++k) {
        const int f = threadIdx.x + k * kThreads;
        if (f >= n4) break;
        float2 ds;
        reinterpret_cast<uint32_t*>(m.xq)[f] = quantise4(v[k], ds);
        if ((lane & 7) == 0) m.xds[f / 8] = ds;
    }
}

// Cluster preparation (k_ws<.., Cl > 1>, launched in thread-block clusters of Cl): CTA r of the
// cluster reads and quantises the r-th share of the input (its raw values: a q8 block's ints
// do not change with the norm, its scale does) and writes the ints and scales into every
// member's shared memory (distributed shared memory), with its share of the sum of squares,
// then arrives on every member's input_ready mbarrier; each member waits for its Cl arrivals
// and scales by the norm itself (norm_of). The L2 reads and the
// quantising are 1 / Cl of k_ws's.
namespace cg = cooperative_groups;
template <int Cl>
__device__ void prepare_cluster(const Params& p, int s, Smem& m, float* ss_parts,
                                uint64_t* input_ready, unsigned parity) {
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned r = cluster.block_rank();
    const int n4 = stage_in(s) / 4, share = n4 / Cl, lo = int(r) * share;
    const int lane = threadIdx.x % 32, wp = threadIdx.x / 32;
    const float* src = s == 0 || s == 2 ? p.h : s == 1 ? p.qkv : p.gu;
    constexpr int V = (kFf / 4 / Cl + kThreads - 1) / kThreads;
    float4 v[V];
    float ss = 0;
#pragma unroll
    for (int k = 0; k < V; ++k) {
        const int f = lo + int(threadIdx.x) + k * kThreads;
        v[k] = f < lo + share ? __ldcg(reinterpret_cast<const float4*>(src) + f)
                              : make_float4(0, 0, 0, 0);
        ss += v[k].x * v[k].x + v[k].y * v[k].y + v[k].z * v[k].z + v[k].w * v[k].w;
    }
#pragma unroll
    for (int k = 0; k < V; ++k) {
        const int f = lo + int(threadIdx.x) + k * kThreads;
        if (f >= lo + share) break;  // whole 8-lane groups (share is a multiple of 8)
        float2 ds;
        const uint32_t word = quantise4(v[k], ds);
        for (int t = 0; t < Cl; ++t) {
            reinterpret_cast<uint32_t*>(cluster.map_shared_rank(m.xq, t))[f] = word;
            if ((lane & 7) == 0) cluster.map_shared_rank(m.xds, t)[f / 8] = ds;
        }
    }
    ss = warp_sum(ss);
    if (lane == 0) m.red[wp] = ss;
    csync();  // (also: every thread's remote stores before thread 0's release below)
    if (threadIdx.x == 0) {
        float t = 0;
        for (int i = 0; i < kThreads / 32; ++i) t += m.red[i];
        for (int q = 0; q < Cl; ++q) cluster.map_shared_rank(ss_parts, q)[r] = t;
        // Each member's input_ready counts Cl arrivals a stage (a cluster barrier would wait
        // for the producer warp too, which never comes).
        for (int q = 0; q < Cl; ++q) {
            unsigned remote;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
                         : "=r"(remote)
                         : "r"(smem_addr(input_ready)), "r"(q));
            asm volatile(
                "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote)
                : "memory");
        }
    }
    asm volatile(
        "{\n .reg .pred p;\n W: mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], "
        "%1;\n @!p bra W;\n}\n" ::"r"(smem_addr(input_ready)),
        "r"(parity)
        : "memory");
}
template <int Cl>
__device__ inline float norm_of(int s, const float* ss_parts) {
    if (s != 0 && s != 2) return 1.0f;
    float t = 0;
    for (int q = 0; q < Cl; ++q) t += ss_parts[q];
    return rsqrtf(t / float(stage_in(s)) + 1e-5f);
}

// A thread's share of the stage's input: the one 32-value block (blk = thread % IPR) it meets
// in every row, held in registers through the stage (an earlier version read it from shared
// memory per item: 58 bytes of shared reads per 16 weight bytes; consume took 40 us a layer).
struct Act {
    int4 lo, hi;  // q8 values 0-15, 16-31
    float2 ds;    // (scale, scale * sum)
};
template <int IPR>
__device__ inline Act act_of(const Smem& m) {
    const int blk = threadIdx.x % IPR;
    return Act{*reinterpret_cast<const int4*>(m.xq + blk * 32),
               *reinterpret_cast<const int4*>(m.xq + blk * 32 + 16), m.xds[blk]};
}

// The slot's rows against the input. IPR: 32-weight blocks a row (128 or 448). A row's blocks
// are spread over WPR = IPR / 32 warps (lane = block within the warp's 32, its activations in
// registers all stage); the 16 warps form 16 / WPR sets, set i taking slot rows 4i .. 4i + 3. A
// lane's 4 rows reduce over the warp in one transposed butterfly (6 shuffles for the 4 rows, not
// 20), and each warp stores its 4 row parts (acc[row * WPR + part]).
template <int IPR>
__device__ inline void consume(const uint8_t* slot, const Cursor& c, const Act& x, Smem& m) {
    constexpr int RB = IPR / 8 * kGroupBytes, WPR = IPR / 32, SETS = kThreads / 32 / WPR;
    constexpr int R = kRowsAWarp;
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (w >= SETS * WPR) return;  // (448: warps 14, 15)
    const int set = w / WPR, part = w % WPR, blk = part * 32 + lane;
    const int nrows = slot_rows_left(c);
    const uint8_t* g0 = slot + (blk / 8) * kGroupBytes;
    // No branch per row (rows past the slot's end read its last row and are dropped below),
    // and each row's 8 dot products in two chains of 4: ncu showed the warps waiting on the
    // one 8-deep chain of dependent dp4a per row, the rows not interleaved behind the branch.
    float v[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int row = min(set * R + r, nrows - 1);
        const uint8_t* g = g0 + row * RB;
        const float d = __half2float(reinterpret_cast<const __half*>(g)[blk % 8]);
        const uint4 q = *reinterpret_cast<const uint4*>(g + 16 + (blk % 8) * 16);
        int t0 = __dp4a(int(q.x & M4), x.lo.x, 0);
        int t1 = __dp4a(int((q.x >> 4) & M4), x.hi.x, 0);
        t0 = __dp4a(int(q.y & M4), x.lo.y, t0);
        t1 = __dp4a(int((q.y >> 4) & M4), x.hi.y, t1);
        t0 = __dp4a(int(q.z & M4), x.lo.z, t0);
        t1 = __dp4a(int((q.z >> 4) & M4), x.hi.z, t1);
        t0 = __dp4a(int(q.w & M4), x.lo.w, t0);
        t1 = __dp4a(int((q.w >> 4) & M4), x.hi.w, t1);
        v[r] = d * (x.ds.x * float(t0 + t1) - 8.0f * x.ds.y);  // nibbles minus 8 via the sum
    }
    // butterfly: after xor 16 a lane holds rows (upper ? 2, 3 : 0, 1), after xor 8 one row
    const bool up16 = lane & 16, up8 = lane & 8;
    const float r0 = __shfl_xor_sync(0xffffffffu, up16 ? v[0] : v[2], 16);
    const float r1 = __shfl_xor_sync(0xffffffffu, up16 ? v[1] : v[3], 16);
    const float k0 = (up16 ? v[2] : v[0]) + r0, k1 = (up16 ? v[3] : v[1]) + r1;
    float k = (up8 ? k1 : k0) + __shfl_xor_sync(0xffffffffu, up8 ? k0 : k1, 8);
    k += __shfl_xor_sync(0xffffffffu, k, 4);
    k += __shfl_xor_sync(0xffffffffu, k, 2);
    k += __shfl_xor_sync(0xffffffffu, k, 1);
    const int row = set * R + (up16 ? 2 : 0) + (up8 ? 1 : 0);
    if ((lane & 7) == 0 && row < nrows) m.acc[(c.row + row) * WPR + part] = k;
}

__device__ void finish(const Params& p, int s, Smem& m) {
    csync();  // every slot's parts in acc[]
    int r0, r1;
    row_range(s, r0, r1);
    const int parts = stage_in(s) / 32 / 32;
    for (int i = threadIdx.x; i < r1 - r0; i += kThreads) {
        float v = 0;
        for (int q = 0; q < parts; ++q) v += m.acc[i * parts + q];
        if (s == 0)
            p.qkv[r0 + i] = v;
        else if (s == 2)
            m.acc[i * parts] = v;  // (parts: its slot read by this thread only)
        else
            p.h[r0 + i] = __ldcg(p.h + r0 + i) + v;
    }
    if (s == 2) {
        csync();
        for (int i = threadIdx.x; 2 * i < r1 - r0; i += kThreads) {
            const float g = m.acc[2 * i * parts], u = m.acc[(2 * i + 1) * parts];
            p.gu[r0 / 2 + i] = g / (1.0f + __expf(-g)) * u;
        }
    }
}

// Block-uniform phases (each ends at a barrier), timed by thread 0 into shared memory
// (registers are short at 2 blocks an SM); added to prof[block][5] at the end.
enum Phase { kPrep, kBar, kWait, kUse, kIssue };
struct PhaseClock {
    unsigned long long* t;  // [6]: the 5 phases, then the last lap's clock
    __device__ void start() {
        if (threadIdx.x != 0) return;
        for (int i = 0; i < 5; ++i) t[i] = 0;
        t[5] = clock64();
    }
    __device__ void lap(Phase i) {
        if (threadIdx.x != 0) return;
        const unsigned long long now = clock64();
        t[i] += now - t[5];
        t[5] = now;
    }
    __device__ void store(unsigned long long* prof) const {
        if (threadIdx.x != 0 || !prof) return;
        for (int i = 0; i < 5; ++i) prof[5 * blockIdx.x + i] += t[i];
    }
};

// Shared memory: the ring of S slots, the q8 input, acc[1024] (red[32] after it, k_dyn and k_ll
// place theirs), then the kernel's mbarriers and the rest.
__device__ inline Smem carve(uint8_t* smem, int S) {
    Smem m;
    m.xq = reinterpret_cast<int8_t*>(smem + S * kSlotBytes);
    m.xds = reinterpret_cast<float2*>(smem + S * kSlotBytes + kFf);
    m.acc = reinterpret_cast<float*>(smem + S * kSlotBytes + kFf + kFf / 32 * 8);
    m.red = m.acc + 1024;
    return m;
}
__device__ inline uint64_t* after_red(const Smem& m) {
    return reinterpret_cast<uint64_t*>(m.red + 32);
}

// The slot's rows against the stage's input (the items a row as a template argument).
__device__ inline void consume_slot(const uint8_t* slot, const Cursor& c, const Act& x, Smem& m) {
    if (c.s == 3)
        consume<kFf / 32>(slot, c, x, m);
    else
        consume<kDim / 32>(slot, c, x, m);
}
// After the input is in shared memory: every thread's activation block in registers.
__device__ inline Act stage_acts(int s, Smem& m) {
    csync();  // the q8 input complete
    return s == 3 ? act_of<kFf / 32>(m) : act_of<kDim / 32>(m);
}

// The warp-specialised kernels' producer (lane 0 of the last warp): every slot of the block's
// stream, bulk-copied into the ring as the consumers free it. Pre > 0: the slot Pre past the
// one issued is also asked of L2 before the wait for a free ring slot, so that the stream goes
// on (into L2) while the consumers wait at a stage boundary with the ring full.
__device__ inline void prefetch_l2(const void* src, unsigned bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes) : "memory");
}
template <int S, int Pre = 0>
__device__ void produce(const Params& p, uint8_t* ring, uint64_t* full, uint64_t* empty) {
    Cursor prod, pre;
    enter(p, prod, p.stage_begin);
    enter(p, pre, p.stage_begin);
    for (int j = 0; j < Pre && pre.gs < p.stage_end; ++j) advance(p, pre);
    for (int j = 0; prod.gs < p.stage_end; ++j) {
        const int i = j % S;
        if (Pre > 0 && pre.gs < p.stage_end) {
            prefetch_l2(pre.base + int64_t(pre.row) * pre.rb,
                        unsigned(slot_rows_left(pre) * pre.rb));
            advance(p, pre);
        }
        if (j >= S) mbar_wait(empty + i, unsigned(j / S - 1) & 1u);
        const int bytes = slot_rows_left(prod) * prod.rb;
        bulk_load(ring + i * kSlotBytes, prod.base + int64_t(prod.row) * prod.rb, unsigned(bytes),
                  full + i);
        advance(p, prod);
    }
}
// A consumer warp's turn at ring slot k of the warp-specialised kernels: wait for its bytes,
// consume it, hand it back to the producer, and move the cursor on.
template <int S>
__device__ inline void use_slot(const Params& p, int k, const uint8_t* ring, uint64_t* full,
                                uint64_t* empty, Cursor& cons, const Act& x, Smem& m,
                                PhaseClock& clk) {
    mbar_wait(full + k % S, unsigned(k / S) & 1u);
    clk.lap(kWait);
    consume_slot(ring + (k % S) * kSlotBytes, cons, x, m);
    __syncwarp();
    if (threadIdx.x % 32 == 0) mbar_arrive(empty + k % S);
    advance(p, cons);
    clk.lap(kUse);
}
// full[i]: 1 arrival (the producer's, with the bytes); empty[i]: the 16 consumer warps.
template <int S>
__device__ void init_ring_barriers(uint64_t* full, uint64_t* empty) {
    if (threadIdx.x < S) {
        mbar_init_n(full + threadIdx.x, 1);
        mbar_init_n(empty + threadIdx.x, kThreads / 32);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

template <int S, bool Bulk, int BPS>
__global__ void __launch_bounds__(kThreads, BPS) k_persistent(Params p) {
    extern __shared__ __align__(16) uint8_t smem[];
    uint8_t* ring = smem;
    Smem m = carve(smem, S);
    uint64_t* bars = after_red(m);  // [S]
    if (Bulk) {
        if (threadIdx.x < S) mbar_init_n(bars + threadIdx.x, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        __syncthreads();
    }
    __shared__ unsigned long long clock_t6[6];
    PhaseClock clk{clock_t6};
    clk.start();

    Cursor prod, cons;
    enter(p, prod, p.stage_begin);
    enter(p, cons, p.stage_begin);
    for (int k = 0; k < S - 1; ++k) issue<Bulk>(p, prod, ring + k * kSlotBytes, bars + k);
    int cur = -1;
    unsigned barriers = 0;
    Act x;
    for (int k = 0; cons.gs < p.stage_end; ++k) {
        if (cons.gs != cur) {
            if (cur >= 0) {
                finish(p, cur % kStages, m);
                grid_barrier(p.bar, gridDim.x * ++barriers);
                clk.lap(kBar);
            }
            prepare(p, cons.s, m);
            x = stage_acts(cons.s, m);
            cur = cons.gs;
            clk.lap(kPrep);
        }
        if (Bulk) {
            mbar_wait(bars + k % S, unsigned(k / S) & 1u);
        } else {
            cp_wait<S - 2>();
        }
        __syncthreads();  // slot k landed for every thread; slot k - 1 free (all consumed it)
        clk.lap(kWait);
        consume_slot(ring + (k % S) * kSlotBytes, cons, x, m);
        clk.lap(kUse);
        issue<Bulk>(p, prod, ring + ((k + S - 1) % S) * kSlotBytes, bars + (k + S - 1) % S);
        advance(p, cons);
        clk.lap(kIssue);
    }
    if (cur >= 0) finish(p, cur % kStages, m);
    clk.store(p.prof);
}

// Warp-specialised: 16 consumer warps and one producer warp whose lane 0 streams the block's
// slots (bulk copies) as fast as the ring frees them: full[i] completes when slot i's bytes
// landed, empty[i] when the 16 consumer warps are done with it. The consumers never wait for an
// issue and have no block-wide barrier per slot (the kernel above: thread 0 issued between two
// __syncthreads, and the bulk-copy instruction held it 0.2-0.3 us a slot).
// Skip (measuring only: the results are wrong): 1 = no grid barrier, 2 = no barrier and no input
// preparation (the stage reads the q8 input left in shared memory): what the stage waits cost.
template <int S, int Skip = 0, int BarMode = 0, int Pre = 0, int Cl = 1>
__global__ void __launch_bounds__(kThreads + 32, 1) k_ws(Params p) {
    extern __shared__ __align__(16) uint8_t smem[];
    uint8_t* ring = smem;
    Smem m = carve(smem, S);
    uint64_t* full = after_red(m);  // [S]
    uint64_t* empty = full + S;     // [S]
    init_ring_barriers<S>(full, empty);
    __shared__ uint64_t input_ready;  // Cl > 1: the cluster's shares of a stage's input landed
    if (Cl > 1) {
        if (threadIdx.x == 0) mbar_init_n(&input_ready, Cl);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        cg::this_cluster().sync();  // every member's barrier initialised before any arrives
    } else {
        __syncthreads();
    }
    if (threadIdx.x >= kThreads) {  // the producer warp
        if (threadIdx.x == kThreads) produce<S, Pre>(p, ring, full, empty);
        return;
    }
    __shared__ unsigned long long clock_t6[6];
    PhaseClock clk{clock_t6};
    clk.start();
    __shared__ float ss_parts[Cl > 1 ? Cl : 1];  // Cl > 1: each member's sum of squares
    unsigned prepared = 0;                       // Cl > 1: stages prepared (input_ready's phase)

    Cursor cons;
    enter(p, cons, p.stage_begin);
    int cur = -1;
    unsigned barriers = 0;
    Act x;
    for (int k = 0; cons.gs < p.stage_end; ++k) {
        if (cons.gs != cur) {
            if (cur >= 0) {
                finish(p, cur % kStages, m);
                if (Skip == 0) grid_barrier<BarMode>(p.bar, gridDim.x * ++barriers);
                clk.lap(kBar);
            }
            if (Cl > 1) {
                prepare_cluster<Cl>(p, cons.s, m, ss_parts, &input_ready, prepared++ & 1u);
                x = stage_acts(cons.s, m);
                const float norm = norm_of<Cl>(cons.s, ss_parts);
                x.ds.x *= norm;
                x.ds.y *= norm;
            } else {
                if (Skip < 2 || cur < 0) prepare(p, cons.s, m);
                x = stage_acts(cons.s, m);
            }
            cur = cons.gs;
            clk.lap(kPrep);
        }
        use_slot<S>(p, k, ring, full, empty, cons, x, m, clk);
    }
    if (cur >= 0) finish(p, cur % kStages, m);
    clk.store(p.prof);
}

// Dynamic chunks: a block's producer claims the next chunk of rows (one slot: 16 rows of 4096
// inputs, 4 of 14336) from a per-stage counter, stage after stage, and streams it; the warp that
// finishes a chunk last writes its rows and counts it done for the stage. A consumer that meets
// a chunk of a new stage waits for the stage before to be done everywhere (no grid barrier),
// then prepares the input. Blocks that stream faster take more chunks: with fixed row ranges
// the slowest block held every barrier (k_ws: 15-18 us a layer in barrier waits).
__host__ __device__ inline int chunks_of(int s) {
    return stage_out(s) / slot_rows(s);
}

// The chunk's rows from the warps' parts (one warp).
__device__ void finish_chunk(const Params& p, int gs, int chunk, const float* parts) {
    const int s = gs % kStages, rows = slot_rows(s), wpr = stage_in(s) / 1024;
    const int lane = threadIdx.x % 32;
    auto row_sum = [&](int r) {
        float v = 0;
        for (int q = 0; q < wpr; ++q) v += parts[r * wpr + q];
        return v;
    };
    if (s == 2) {
        if (lane < rows / 2) {
            const float g = row_sum(2 * lane), u = row_sum(2 * lane + 1);
            p.gu[chunk * rows / 2 + lane] = g / (1.0f + __expf(-g)) * u;
        }
    } else if (lane < rows) {
        const int row = chunk * rows + lane;
        const float v = row_sum(lane);
        if (s == 0)
            p.qkv[row] = v;
        else
            atomicAdd(p.h + row, v);  // a reduction the warp does not wait for (one per row)
    }
}

template <int S>
__global__ void __launch_bounds__(kThreads + 32, 1) k_dyn(Params p) {
    extern __shared__ __align__(16) uint8_t smem[];
    uint8_t* ring = smem;
    Smem m = carve(smem, S);
    float* parts = m.acc;  // [S][64]: a slot's warp sums (acc is S * 64 floats here)
    int2* hdr = reinterpret_cast<int2*>(after_red(m));                      // [S] (stage, chunk)
    unsigned* cnt = reinterpret_cast<unsigned*>(hdr + S);                   // [S] warps done
    uint64_t* full = reinterpret_cast<uint64_t*>(cnt + 2 * ((S + 1) / 2));  // [S]
    uint64_t* empty = full + S;                                             // [S]
    init_ring_barriers<S>(full, empty);
    if (threadIdx.x < S) cnt[threadIdx.x] = 0;
    __syncthreads();

    if (threadIdx.x >= kThreads) {  // the producer warp
        if (threadIdx.x != kThreads) return;
        int gs = p.stage_begin;
        unsigned c = atomicAdd(p.claim + gs, 1u);
        for (int j = 0;; ++j) {
            const int i = j % S;
            if (j >= S) mbar_wait(empty + i, unsigned(j / S - 1) & 1u);
            while (gs < p.stage_end && c >= unsigned(chunks_of(gs % kStages))) {
                if (++gs < p.stage_end) c = atomicAdd(p.claim + gs, 1u);
            }
            if (gs >= p.stage_end) {
                hdr[i] = make_int2(-1, 0);
                mbar_arrive(full + i);
                return;
            }
            hdr[i] = make_int2(gs, int(c));
            const int st = gs % kStages, rows = slot_rows(st);
            const int64_t rb = stage_row_bytes(st);
            bulk_load(ring + i * kSlotBytes, p.w[gs] + int64_t(c) * rows * rb, unsigned(rows * rb),
                      full + i);
            c = atomicAdd(p.claim + gs, 1u);  // the next claim, on its way during the next wait
        }
    }
    __shared__ unsigned long long clock_t6[6];
    PhaseClock clk{clock_t6};
    clk.start();

    const int lane = threadIdx.x % 32;
    int cur = -1;
    Act x;
    for (int k = 0;; ++k) {
        const int i = k % S;
        mbar_wait(full + i, unsigned(k / S) & 1u);
        clk.lap(kWait);
        const int2 h = hdr[i];
        if (h.x < 0) break;
        const int s = h.x % kStages;
        if (h.x != cur) {
            if (h.x > p.stage_begin && threadIdx.x == 0) {
                const unsigned need = unsigned(chunks_of((h.x - 1) % kStages));
                while (ld_acquire(p.done + h.x - 1) < need) {
                }
            }
            csync();
            clk.lap(kBar);
            prepare(p, s, m);
            x = stage_acts(s, m);
            cur = h.x;
            clk.lap(kPrep);
        }
        const Cursor c{h.x, s, slot_rows(s), 0, int(stage_row_bytes(s)), slot_rows(s), nullptr};
        Smem ms = m;
        ms.acc = parts + i * 64;
        consume_slot(ring + i * kSlotBytes, c, x, ms);
        clk.lap(kUse);
        __syncwarp();
        unsigned last = 0;
        if (lane == 0) {
            __threadfence_block();
            last = atomicAdd(cnt + i, 1u) == kThreads / 32 - 1;
        }
        if (__shfl_sync(0xffffffffu, last, 0)) {
            __threadfence_block();
            finish_chunk(p, h.x, h.y, parts + i * 64);
            __syncwarp();
            if (lane == 0) {
                cnt[i] = 0;
                // release: the rows' stores before the count, and the warp does not wait
                // (a __threadfence here drained every store of the warp first)
                asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(p.done + h.x)
                             : "memory");
            }
        }
        __syncwarp();
        if (lane == 0) mbar_arrive(empty + i);
        clk.lap(kIssue);  // (here: counting, finishing the chunk)
    }
    clk.store(p.prof);
}

// k_ws with flag-in-data stage outputs (prepare_ll): no grid barrier. A block owns the same
// 4096-row range of h in the o and down stages, so it keeps its rows of h in shared memory and
// writes h + o, h + down as (value, flag) pairs.
template <int S, unsigned SleepNs>
__global__ void __launch_bounds__(kThreads + 32, 1) k_ll(Params p) {
    extern __shared__ __align__(16) uint8_t smem[];
    uint8_t* ring = smem;
    Smem m = carve(smem, S);
    float* hrow = m.acc + 1024 - 32;  // [<= 32] this block's rows of h (acc uses <= 872)
    uint64_t* full = after_red(m);    // [S]
    uint64_t* empty = full + S;       // [S]
    init_ring_barriers<S>(full, empty);
    {
        int r0, r1;
        row_range(1, r0, r1);
        for (int i = threadIdx.x; i < r1 - r0; i += blockDim.x)
            hrow[i] = __uint_as_float(p.h_ll[r0 + i].x);
    }
    __syncthreads();
    if (threadIdx.x >= kThreads) {  // the producer warp, as k_ws
        if (threadIdx.x == kThreads) produce<S>(p, ring, full, empty);
        return;
    }
    __shared__ unsigned long long clock_t6[6];
    PhaseClock clk{clock_t6};
    clk.start();

    // The stage's rows out as pairs flagged gs + 1 (s = 2: the gated activation of its pairs).
    auto finish_ll = [&](int gs) {
        const int s = gs % kStages;
        csync();  // every slot's parts in acc[]
        int r0, r1;
        row_range(s, r0, r1);
        const int parts = stage_in(s) / 32 / 32;
        const unsigned flag = unsigned(gs + 1);
        for (int i = threadIdx.x; i < r1 - r0; i += kThreads) {
            float v = 0;
            for (int q = 0; q < parts; ++q) v += m.acc[i * parts + q];
            if (s == 0) {
                st_volatile_pair(p.qkv_ll + r0 + i, v, flag);
            } else if (s == 2) {
                m.acc[i * parts] = v;
            } else {
                hrow[i] += v;
                st_volatile_pair(p.h_ll + r0 + i, hrow[i], flag);
            }
        }
        if (s == 2) {
            csync();
            for (int i = threadIdx.x; 2 * i < r1 - r0; i += kThreads) {
                const float g = m.acc[2 * i * parts], u = m.acc[(2 * i + 1) * parts];
                st_volatile_pair(p.act_ll + r0 / 2 + i, g / (1.0f + __expf(-g)) * u, flag);
            }
        }
    };
    Cursor cons;
    enter(p, cons, p.stage_begin);
    int cur = -1;
    Act x;
    for (int k = 0; cons.gs < p.stage_end; ++k) {
        if (cons.gs != cur) {
            if (cur >= 0) finish_ll(cur);
            csync();  // acc[] read (finish) before the next stage's parts
            clk.lap(kBar);
            prepare_ll(p, cons.s, unsigned(cons.gs), m, SleepNs);
            x = stage_acts(cons.s, m);
            cur = cons.gs;
            clk.lap(kPrep);
        }
        use_slot<S>(p, k, ring, full, empty, cons, x, m, clk);
    }
    if (cur >= 0) finish_ll(cur);
    clk.store(p.prof);
}

// ---- the reference ---------------------------------------------------------------------------

// One thread: the stage's input as q8 (its own code: double norm), into xq / xds.
__global__ void k_ref_prepare(const Params p, int s, int8_t* xq, float2* xds) {
    const int n = stage_in(s);
    double ss = 0;
    for (int i = 0; i < kDim; ++i) ss += double(p.h[i]) * p.h[i];
    const float norm = float(1.0 / sqrt(ss / kDim + 1e-5));
    for (int b = 0; b < n / 32; ++b) {
        float v[32], amax = 0;
        for (int j = 0; j < 32; ++j) {
            const int i = b * 32 + j;
            if (s == 0 || s == 2)
                v[j] = p.h[i] * norm;
            else if (s == 1)
                v[j] = p.qkv[i];
            else
                v[j] = p.gu[2 * i] / (1.0f + expf(-p.gu[2 * i])) * p.gu[2 * i + 1];
            amax = fmaxf(amax, fabsf(v[j]));
        }
        const float d = amax / 127.0f;
        int sum = 0;
        for (int j = 0; j < 32; ++j) {
            const int q = d > 0 ? int(rintf(v[j] / d)) : 0;
            xq[b * 32 + j] = int8_t(q);
            sum += q;
        }
        xds[b] = make_float2(d, d * float(sum));
    }
}

// One thread per row, double sums, then the stage's output.
__global__ void k_ref_matvec(const Params p, int gs, const int8_t* xq, const float2* xds) {
    const int s = gs % kStages, r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= stage_out(s)) return;
    const uint8_t* row = p.w[gs] + int64_t(r) * stage_row_bytes(s);
    double acc = 0;
    for (int b = 0; b < stage_in(s) / 32; ++b) {
        const uint8_t* g = row + (b / 8) * kGroupBytes;
        const float d = __half2float(reinterpret_cast<const __half*>(g)[b % 8]);
        const uint8_t* q = g + 16 + (b % 8) * 16;
        long t = 0;
        for (int j = 0; j < 32; ++j) {
            const int wv = (j < 16 ? (q[j] & 15) : (q[j - 16] >> 4)) - 8;
            t += long(wv) * xq[b * 32 + j];
        }
        acc += double(d) * double(xds[b].x) * double(t);
    }
    if (s == 0)
        p.qkv[r] = float(acc);
    else if (s == 2)
        p.gu[r] = float(acc);  // interleaved: the reference's prepare pairs them
    else
        p.h[r] += float(acc);
}

// ---- host ---------------------------------------------------------------------------------

// Random weights: scales 0.002..0.004 (outputs of order one after the norm), random nibbles.
__global__ void k_fill(uint8_t* w, int64_t bytes, uint32_t seed) {
    const int64_t n16 = bytes / 16;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n16;
         i += int64_t(gridDim.x) * blockDim.x) {
        uint32_t x = uint32_t(i) * 2654435761u ^ seed;
        uint32_t v[4];
        for (int k = 0; k < 4; ++k) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            v[k] = x;
        }
        if (i % 9 == 0) {  // the group's 8 scales
            for (int k = 0; k < 4; ++k) {
                const __half a = __float2half(0.002f + 0.002f * float(v[k] & 1023) / 1023.0f);
                const __half b =
                    __float2half(0.002f + 0.002f * float((v[k] >> 10) & 1023) / 1023.0f);
                v[k] = uint32_t(__half_as_ushort(a)) | uint32_t(__half_as_ushort(b)) << 16;
            }
        }
        reinterpret_cast<uint4*>(w)[i] = make_uint4(v[0], v[1], v[2], v[3]);
    }
}

struct Model {
    int layers;
    std::vector<uint8_t*> mats;
    const uint8_t* const* dmats;
    float *h, *qkv, *gu;
    unsigned* bar;
    unsigned long long* prof;
    unsigned *claim, *done;
    uint2 *h_ll, *qkv_ll, *act_ll;
    std::vector<float> h0;
    std::vector<uint2> h0_ll;  // (h0, flag 0)
    uint2* h0_ll_dev;          // its copy on the device (graph capture takes no pageable copy)
    double bytes_per_layer;
};

static Params params(const Model& m, int b, int e) {
    return Params{m.dmats, b,       e,      m.h,    m.qkv,    m.gu,    m.bar,
                  m.prof,  m.claim, m.done, m.h_ll, m.qkv_ll, m.act_ll};
}
static void reset(const Model& m, cudaStream_t st) {
    CK(cudaMemcpyAsync(m.h, m.h0.data(), kDim * 4, cudaMemcpyHostToDevice, st));
    CK(cudaMemsetAsync(m.bar, 0, 4, st));
}

template <int S>
size_t smem_bytes() {
    return size_t(S) * kSlotBytes + kFf + kFf / 32 * 8 + (1024 + 32) * 4 + 2 * S * 8 + S * 16;
}

// Kind 0: k_persistent with cp.async, 1: with bulk copies, 2: k_ws (warp-specialised), 3: k_dyn,
// 4: k_ll.
template <int S, int Kind, int BPS>
auto kernel_of() {
    if constexpr (Kind == 7 || Kind == 8)
        return k_ws<S, Kind - 6>;
    else if constexpr (Kind == 15 || Kind == 16)
        return k_ws<S, 0, 0, 0, (Kind == 15 ? 2 : 4)>;
    else if constexpr (Kind >= 11 && Kind <= 14)
        return k_ws<S, 0, 0, (Kind == 11 ? 4 : Kind == 12 ? 8 : Kind == 13 ? 12 : 20)>;
    else if constexpr (Kind == 9 || Kind == 10)
        return k_ws<S, 0, Kind - 8>;
    else if constexpr (Kind >= 4)
        return k_ll<S, (Kind == 4 ? 0u : Kind == 5 ? 200u : 1000u)>;
    else if constexpr (Kind == 3)
        return k_dyn<S>;
    else if constexpr (Kind == 2)
        return k_ws<S>;
    else
        return k_persistent<S, Kind == 1, BPS>;
}
template <int Kind>
constexpr int threads_of() {
    return Kind >= 2 ? kThreads + 32 : kThreads;  // (7, 8: k_ws too)
}

template <int S, int Kind, int BPS>
void launch_persistent(const Model& m, int sms, int b, int e, cudaStream_t st) {
    CK(cudaMemsetAsync(m.bar, 0, 4, st));
    CK(cudaMemsetAsync(m.claim, 0, size_t(m.layers) * kStages * 4, st));
    CK(cudaMemsetAsync(m.done, 0, size_t(m.layers) * kStages * 4, st));
    if (Kind >= 4 && Kind <= 6) {  // no stale flags from the launch before
        CK(cudaMemcpyAsync(m.h_ll, m.h0_ll_dev, kDim * 8, cudaMemcpyDeviceToDevice, st));
        CK(cudaMemsetAsync(m.qkv_ll, 0, kQkv * 8, st));
        CK(cudaMemsetAsync(m.act_ll, 0, kFf * 8, st));
    }
    if constexpr (Kind == 15 || Kind == 16) {
        // Clusters of 2 or 4 on the SMs that can hold them all at once (a persistent grid).
        const int cl = Kind == 15 ? 2 : 4;
        cudaLaunchConfig_t cfg{};
        cudaLaunchAttribute attr{};
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = unsigned(cl);
        attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
        cfg.blockDim = dim3(threads_of<Kind>());
        cfg.dynamicSmemBytes = smem_bytes<S>();
        cfg.stream = st;
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
        cfg.gridDim = dim3(unsigned(sms / cl * cl));
        int fit = 0;
        CK(cudaOccupancyMaxActiveClusters(&fit, kernel_of<S, Kind, BPS>(), &cfg));
        cfg.gridDim = dim3(unsigned(std::min(fit, sms / cl) * cl));
        static bool told = false;
        if (!told) {
            told = true;
            printf("  (clusters of %d: %d fit at once, a grid of %u blocks)\n", cl, fit,
                   cfg.gridDim.x);
        }
        CK(cudaLaunchKernelEx(&cfg, kernel_of<S, Kind, BPS>(), params(m, b, e)));
    } else {
        kernel_of<S, Kind, BPS>()<<<sms * BPS, threads_of<Kind>(), smem_bytes<S>(), st>>>(
            params(m, b, e));
    }
}

static std::vector<float> read_h(const Model& m, bool ll = false) {
    std::vector<float> h(kDim);
    if (ll) {
        std::vector<uint2> pairs(kDim);
        CK(cudaMemcpy(pairs.data(), m.h_ll, kDim * 8, cudaMemcpyDeviceToHost));
        for (int i = 0; i < kDim; ++i) std::memcpy(&h[i], &pairs[i].x, 4);
    } else {
        CK(cudaMemcpy(h.data(), m.h, kDim * 4, cudaMemcpyDeviceToHost));
    }
    return h;
}

template <int S, int Kind, int BPS = 1>
void run_variant(const Model& m, int sms, bool per_stage, const std::vector<float>& ref,
                 double copy_gbs) {
    CK(cudaFuncSetAttribute(kernel_of<S, Kind, BPS>(), cudaFuncAttributeMaxDynamicSharedMemorySize,
                            int(smem_bytes<S>())));
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel_of<S, Kind, BPS>(),
                                                     threads_of<Kind>(), smem_bytes<S>()));
    if (occ < BPS) {
        printf("  S=%d does not fit\n", S);
        return;
    }
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    auto step = [&](int layers) {
        if (per_stage) {
            for (int gs = 0; gs < layers * kStages; ++gs)
                launch_persistent<S, Kind, BPS>(m, sms, gs, gs + 1, st);
        } else {
            launch_persistent<S, Kind, BPS>(m, sms, 0, layers * kStages, st);
        }
    };
    // check: 2 layers
    reset(m, st);
    step(2);
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    const std::vector<float> got = read_h(m, Kind >= 4 && Kind <= 6);
    double worst = 0, scale = 0;
    for (int i = 0; i < kDim; ++i) scale = std::max(scale, double(std::fabs(ref[i])));
    for (int i = 0; i < kDim; ++i)
        worst = std::max(worst, std::fabs(double(got[i]) - ref[i]) / scale);
    // time: all layers, in a graph
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    step(m.layers);
    CK(cudaStreamEndCapture(st, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 2; ++i) CK(cudaGraphLaunch(exec, st));
    CK(cudaStreamSynchronize(st));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const int reps = 10;
    CK(cudaEventRecord(e0, st));
    for (int i = 0; i < reps; ++i) CK(cudaGraphLaunch(exec, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    const double us_layer = ms * 1e3 / reps / m.layers;
    // the phases of one more run, mean over blocks, in us a layer at the SM clock
    std::vector<unsigned long long> prof(size_t(sms) * BPS * 5);
    CK(cudaMemset(m.prof, 0, prof.size() * 8));
    CK(cudaGraphLaunch(exec, st));
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(prof.data(), m.prof, prof.size() * 8, cudaMemcpyDeviceToHost));
    double ph[5] = {}, lo[5], hi[5];
    for (int i = 0; i < 5; ++i) lo[i] = 1e300, hi[i] = 0;
    int ran = 0;  // blocks of the grid (a cluster launch may leave SMs out)
    for (int b = 0; b < sms * BPS; ++b) ran += prof[5 * b + 3] != 0;
    for (int b = 0; b < sms * BPS; ++b)
        for (int i = 0; i < 5 && prof[5 * b + 3] != 0; ++i) {
            const double v = double(prof[5 * b + i]);
            ph[i] += v / ran;
            lo[i] = std::min(lo[i], v);
            hi[i] = std::max(hi[i], v);
        }
    int clock_khz = 0;
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    const double gbs = m.bytes_per_layer / (us_layer * 1e-6) / 1e9;
    printf("  %-12s %s %d/SM S=%-2d %8.2f us a layer  %6.0f GB/s  %.3f of copy   err %.1e%s\n",
           per_stage ? "per-stage" : "persistent",
           Kind == 16   ? "ws, clusters of 4"
           : Kind == 15 ? "ws, clusters of 2"
           : Kind == 14 ? "ws, L2 prefetch 20 slots ahead"
           : Kind == 13 ? "ws, L2 prefetch 12 slots ahead"
           : Kind == 12 ? "ws, L2 prefetch 8 slots ahead"
           : Kind == 11 ? "ws, L2 prefetch 4 slots ahead"
           : Kind == 10 ? "ws, release add + relaxed polls"
           : Kind == 9  ? "ws, polls 64 ns apart"
           : Kind == 8  ? "ws, no barrier or prep (wrong results)"
           : Kind == 7  ? "ws, no barrier (wrong results)"
           : Kind == 6  ? "ll/1000ns"
           : Kind == 5  ? "ll/200ns"
           : Kind == 4  ? "ll   "
           : Kind == 3  ? "dyn  "
           : Kind == 2  ? "ws   "
           : Kind == 1  ? "bulk "
                        : "cp16 ",
           BPS, S, us_layer, gbs, gbs / copy_gbs, worst, worst > 2e-3 ? "  WRONG" : "");
    const double to_us = 1e3 / clock_khz / m.layers;
    printf(
        "      a layer at %d MHz: prepare %.2f  barrier %.2f  slot wait %.2f  consume %.2f  issue "
        "%.2f us\n",
        clock_khz / 1000, ph[0] * to_us, ph[1] * to_us, ph[2] * to_us, ph[3] * to_us,
        ph[4] * to_us);
    printf(
        "      over blocks (min-max): prepare %.1f-%.1f  barrier %.1f-%.1f  slot wait %.1f-%.1f  "
        "consume %.1f-%.1f  issue/finish %.1f-%.1f\n",
        lo[0] * to_us, hi[0] * to_us, lo[1] * to_us, hi[1] * to_us, lo[2] * to_us, hi[2] * to_us,
        lo[3] * to_us, hi[3] * to_us, lo[4] * to_us, hi[4] * to_us);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK(cudaStreamDestroy(st));
}

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    const int layers = argc > 1 ? atoi(argv[1]) : 32;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount;
    printf("%s, %d SMs, L2 %d MB\n", prop.name, sms, prop.l2CacheSize >> 20);

    const double copy = measure_rates(sms).copy_gbs;  // the yardstick, as the product's

    Model m;
    m.layers = layers;
    m.bytes_per_layer = 0;
    for (int s = 0; s < kStages; ++s)
        m.bytes_per_layer += double(stage_out(s)) * stage_row_bytes(s);
    for (int l = 0; l < layers; ++l)
        for (int s = 0; s < kStages; ++s) {
            const int64_t bytes = int64_t(stage_out(s)) * stage_row_bytes(s);
            uint8_t* w;
            CK(cudaMalloc(&w, bytes));
            k_fill<<<1024, 256>>>(w, bytes, 0x9E3779B9u * uint32_t(l * kStages + s + 1));
            m.mats.push_back(w);
        }
    uint8_t** dm;
    CK(cudaMalloc(&dm, m.mats.size() * sizeof(uint8_t*)));
    CK(cudaMemcpy(dm, m.mats.data(), m.mats.size() * sizeof(uint8_t*), cudaMemcpyHostToDevice));
    m.dmats = dm;
    CK(cudaMalloc(&m.h, kDim * 4));
    CK(cudaMalloc(&m.qkv, kQkv * 4));
    CK(cudaMalloc(&m.gu, 2 * kFf * 4));
    CK(cudaMalloc(&m.bar, 4));
    CK(cudaMalloc(&m.prof, size_t(sms) * 2 * 5 * 8));
    CK(cudaMalloc(&m.claim, size_t(layers) * kStages * 4));
    CK(cudaMalloc(&m.done, size_t(layers) * kStages * 4));
    CK(cudaMalloc(&m.h_ll, kDim * 8));
    CK(cudaMalloc(&m.qkv_ll, kQkv * 8));
    CK(cudaMalloc(&m.act_ll, kFf * 8));
    m.h0.resize(kDim);
    m.h0_ll.resize(kDim);
    uint32_t seed = 1;
    for (float& v : m.h0) {
        seed = seed * 1664525u + 1013904223u;
        v = float(int(seed >> 9) % 2001 - 1000) / 1000.0f;
    }
    for (int i = 0; i < kDim; ++i) {
        std::memcpy(&m.h0_ll[i].x, &m.h0[i], 4);
        m.h0_ll[i].y = 0;
    }
    CK(cudaMalloc(&m.h0_ll_dev, kDim * 8));
    CK(cudaMemcpy(m.h0_ll_dev, m.h0_ll.data(), kDim * 8, cudaMemcpyHostToDevice));
    printf("%d layers, %.1f MB of weights a layer (q/k/v, o, gate/up, down; Q4_0), %.2f GB\n",
           layers, m.bytes_per_layer / 1e6, m.bytes_per_layer * layers / 1e9);
    printf("at the copy rate a layer takes %.2f us; 85 %% of it: %.2f us\n",
           m.bytes_per_layer / copy * 1e-3, m.bytes_per_layer / (0.85 * copy) * 1e-3);

    // the reference after 2 layers
    int8_t* xq;
    float2* xds;
    CK(cudaMalloc(&xq, kFf));
    CK(cudaMalloc(&xds, kFf / 32 * 8));
    reset(m, 0);
    for (int gs = 0; gs < 2 * kStages; ++gs) {
        const Params p = params(m, 0, 0);
        k_ref_prepare<<<1, 1>>>(p, gs % kStages, xq, xds);
        k_ref_matvec<<<(stage_out(gs % kStages) + 127) / 128, 128>>>(p, gs, xq, xds);
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    const std::vector<float> ref = read_h(m);
    double hmax = 0;
    for (float v : ref) hmax = std::max(hmax, double(std::fabs(v)));
    printf("reference h after 2 layers: max |h| %.3f\n", hmax);

    // The variants, by letter (session 19's tables in docs/hip.md).
    const char* pick = argc > 2 ? argv[2] : "cdegfj";
    if (strchr(pick, 'a')) run_variant<8, 0>(m, sms, false, ref, copy);   // k_persistent, cp.async
    if (strchr(pick, 'b')) run_variant<8, 1>(m, sms, false, ref, copy);   // k_persistent, bulk
    if (strchr(pick, 'c')) run_variant<5, 2>(m, sms, false, ref, copy);   // k_ws
    if (strchr(pick, 'd')) run_variant<5, 3>(m, sms, false, ref, copy);   // k_dyn
    if (strchr(pick, 'e')) run_variant<5, 4>(m, sms, false, ref, copy);   // k_ll
    if (strchr(pick, 'f')) run_variant<5, 7>(m, sms, false, ref, copy);   // no barrier
    if (strchr(pick, 'g')) run_variant<5, 8>(m, sms, false, ref, copy);   // no barrier, no prep
    if (strchr(pick, 'h')) run_variant<5, 9>(m, sms, false, ref, copy);   // polls 64 ns apart
    if (strchr(pick, 'i')) run_variant<5, 10>(m, sms, false, ref, copy);  // release add
    if (strchr(pick, 'j')) run_variant<5, 2>(m, sms, true, ref, copy);    // k_ws per stage
    if (strchr(pick, 'k')) run_variant<5, 3>(m, sms, true, ref, copy);    // k_dyn per stage
    if (strchr(pick, 'l')) run_variant<4, 1, 2>(m, sms, false, ref, copy);  // 2 blocks an SM
    if (strchr(pick, 'm')) run_variant<5, 11>(m, sms, false, ref, copy);    // L2 prefetch 4
    if (strchr(pick, 'n')) run_variant<5, 12>(m, sms, false, ref, copy);    // 8
    if (strchr(pick, 'o')) run_variant<5, 13>(m, sms, false, ref, copy);    // 12
    if (strchr(pick, 'p')) run_variant<5, 14>(m, sms, false, ref, copy);    // 20
    if (strchr(pick, 'q')) run_variant<5, 15>(m, sms, false, ref, copy);    // clusters of 2
    if (strchr(pick, 'r')) run_variant<5, 16>(m, sms, false, ref, copy);    // clusters of 4
    return 0;
}
