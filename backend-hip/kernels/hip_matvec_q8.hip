// Decode matvec over int8 activations (n_tok <= 8, weight types Q4_0 Q8_0 Q4_K Q5_K Q6_K).
// - k_quantize_q8: each 32 activations of a token become int8 q[32] with a float scale
//   d = max|x| / 127 and the block's sum s = d * sum(q) (the K-quants' mins need it), as the CPU
//   backend quantises its activations.
// - k_matvec_q8: one block of 128 threads per output row; the row is a sequence of "items"
//   (a quarter or half of a Q4_0/Q8_0 block, a sixteenth of a K-quant super-block), thread i
//   takes items i, i+128, ...; each item is 2-4 words of weights against the same number of
//   activation words through 4-way int8 dot products, scaled once per item. Consecutive threads
//   read consecutive bytes, so a warp's loads cover a few contiguous cache lines.
// The int8 weights (nibbles are widened in registers, the Q4_0/Q6_K offsets folded in by byte
// arithmetic) and activations meet in dot4(): __dp4a on CUDA, v_dot4_i32_i8 on AMD targets that
// have it, a plain sum elsewhere.
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdint>

#include "hip_decode.h"
#include "hip_ops.h"

namespace tandem::hip {
namespace {

constexpr int kQ8Block = 32;     // activations per scale
constexpr int kQ8Threads = 128;  // matvec block: one output row
constexpr int kQuantThreads = 256;

// sum of the four int8 products of a and b, plus c.
__device__ inline int dot4(int a, int b, int c) {
#if defined(TANDEM_HIP_ON_CUDA)
    return __dp4a(a, b, c);
#elif defined(__gfx906__) || defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || \
    defined(__gfx941__) || defined(__gfx942__) || defined(__gfx1030__) || defined(__gfx1031__) || \
    defined(__gfx1032__) || defined(__gfx1033__) || defined(__gfx1034__) ||                       \
    defined(__gfx1035__) || defined(__gfx1036__)
    // v_dot4_i32_i8 (dot1-insts): Vega 20, CDNA 1-3, RDNA 2.
    return __builtin_amdgcn_sdot4(a, b, c, false);
#else
    // RDNA 3/4 only have the mixed-sign form (v_dot4_i32_iu8) under a builtin our hipcc may
    // not know; RDNA 1, Vega 10 and the host pass take the plain sum.
    const int8_t* pa = reinterpret_cast<const int8_t*>(&a);
    const int8_t* pb = reinterpret_cast<const int8_t*>(&b);
    return c + pa[0] * pb[0] + pa[1] * pb[1] + pa[2] * pb[2] + pa[3] * pb[3];
#endif
}

__device__ inline float group_max(float v) {
    for (int off = kLaneGroup / 2; off > 0; off >>= 1) {
#if defined(TANDEM_HIP_ON_CUDA)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off, kLaneGroup));
#else
        v = fmaxf(v, __shfl_xor(v, off, kLaneGroup));
#endif
    }
    return v;
}

// f16 bits at a 2-byte aligned address.
__device__ inline float f16_at(const uint8_t* p) {
    return f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(p));
}
// 32-bit word i from a 2-byte aligned address (two 16-bit loads).
__device__ inline int word_at(const uint8_t* p, int i) {
    const auto* h = reinterpret_cast<const uint16_t*>(p) + 2 * i;
    return int(uint32_t(h[0]) | (uint32_t(h[1]) << 16));
}
// Bytes 0..15 -> bytes minus 8 (Q4_0's offset): +0x78 keeps every byte below 0x100, the xor
// flips the sign bit, i.e. subtracts 0x80.
__device__ inline int minus8(uint32_t v) {
    return int((v + 0x78787878u) ^ 0x80808080u);
}
// Bytes 0..63 -> bytes minus 32 (Q6_K's offset), the same way.
__device__ inline int minus32(uint32_t v) {
    return int((v + 0x60606060u) ^ 0x80808080u);
}

// The activations of one token: int8 q [n_in], (d, s) per 32 [n_in / 32].
struct Act {
    const int* q;  // as words
    const float2* ds;
};

// One weight type's items. dot() adds item k of block b of a row to acc[t] for t < n_tok.
template <DType T>
struct Q8Dot;

// Q4_0 {d, qs[16]}: item k (0, 1) = qs bytes 8k..8k+7: low nibbles are weights 8k..8k+7, high
// nibbles 16+8k..; activation words 2k, 2k+1 and 4+2k, 5+2k.
template <>
struct Q8Dot<DType::Q4_0> {
    static constexpr int kWeights = 32, kItems = 2, kBytes = 18, kAlign = 2;
    template <int TM>
    __device__ static void dot(const uint8_t* row, int64_t b, int k, const Act* x, int n_tok,
                               float (&acc)[TM]) {
        const uint8_t* blk = row + b * kBytes;
        const float d = f16_at(blk);
        const uint32_t q0 = uint32_t(word_at(blk + 2, 2 * k)),
                       q1 = uint32_t(word_at(blk + 2, 2 * k + 1));
        const int l0 = minus8(q0 & 0x0F0F0F0Fu), l1 = minus8(q1 & 0x0F0F0F0Fu);
        const int h0 = minus8((q0 >> 4) & 0x0F0F0F0Fu), h1 = minus8((q1 >> 4) & 0x0F0F0F0Fu);
#pragma unroll
        for (int t = 0; t < TM; ++t) {
            if (t < n_tok) {
                const int* xq = x[t].q + b * 8;
                const int s = dot4(
                    l0, xq[2 * k],
                    dot4(l1, xq[2 * k + 1], dot4(h0, xq[4 + 2 * k], dot4(h1, xq[5 + 2 * k], 0))));
                acc[t] += d * x[t].ds[b].x * float(s);
            }
        }
    }
};

// Q8_0 {d, int8 qs[32]}: item k (0, 1) = words 4k..4k+3.
template <>
struct Q8Dot<DType::Q8_0> {
    static constexpr int kWeights = 32, kItems = 2, kBytes = 34, kAlign = 2;
    template <int TM>
    __device__ static void dot(const uint8_t* row, int64_t b, int k, const Act* x, int n_tok,
                               float (&acc)[TM]) {
        const uint8_t* blk = row + b * kBytes;
        const float d = f16_at(blk);
        int q[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) q[i] = word_at(blk + 2, 4 * k + i);
#pragma unroll
        for (int t = 0; t < TM; ++t) {
            if (t < n_tok) {
                const int* xq = x[t].q + b * 8 + 4 * k;
                const int s =
                    dot4(q[0], xq[0], dot4(q[1], xq[1], dot4(q[2], xq[2], dot4(q[3], xq[3], 0))));
                acc[t] += d * x[t].ds[b].x * float(s);
            }
        }
    }
};

// Q4_K/Q5_K super-block of 256 {d, dmin, scales[12], (Q5_K: qh[32]), qs[128]}: item k (0..15) =
// chunk c = k / 4 (qs bytes 32c..32c+31), bytes 8j..8j+7 of it (j = k % 4): the low nibbles are
// positions 8j.. of sub-block 2c, the high nibbles of sub-block 2c + 1; Q5_K's fifth bits are
// bits 2c / 2c + 1 of qh bytes 8j..8j+7. Weight = d * scale * q - dmin * min, so a sub-block
// adds d * scale * d_x * sum(q q_x) - dmin * min * s_x; the min term once, by the j == 0 item.
template <bool Five>
struct Q8DotK45 {
    static constexpr int kWeights = 256, kItems = 16, kBytes = Five ? 176 : 144, kAlign = 16;
    template <int TM>
    __device__ static void dot(const uint8_t* row, int64_t b, int k, const Act* x, int n_tok,
                               float (&acc)[TM]) {
        const uint8_t* blk = row + b * kBytes;
        const int c = k / 4, j = k % 4;
        const uint4 hdr = *reinterpret_cast<const uint4*>(blk);
        const uint2 qs = *reinterpret_cast<const uint2*>(blk + (Five ? 48 : 16) + 32 * c + 8 * j);
        uint32_t lo0 = qs.x & 0x0F0F0F0Fu, lo1 = qs.y & 0x0F0F0F0Fu;
        uint32_t hi0 = (qs.x >> 4) & 0x0F0F0F0Fu, hi1 = (qs.y >> 4) & 0x0F0F0F0Fu;
        if constexpr (Five) {
            const uint2 qh = *reinterpret_cast<const uint2*>(blk + 16 + 8 * j);
            lo0 |= ((qh.x >> (2 * c)) & 0x01010101u) << 4;
            lo1 |= ((qh.y >> (2 * c)) & 0x01010101u) << 4;
            hi0 |= ((qh.x >> (2 * c + 1)) & 0x01010101u) << 4;
            hi1 |= ((qh.y >> (2 * c + 1)) & 0x01010101u) << 4;
        }
        const float d = f16_bits_to_f32(uint16_t(hdr.x & 0xffffu));
        const float dmin = f16_bits_to_f32(uint16_t(hdr.x >> 16));
        // Byte i of the 12 packed scale bytes, by selects (no indexed local array).
        auto sc = [&](int i) {
            const uint32_t word = i < 4 ? hdr.y : (i < 8 ? hdr.z : hdr.w);
            return int((word >> (8 * (i & 3))) & 0xffu);
        };
        // ggml's 6-bit (scale, min) of sub-block s.
        auto scale_min = [&](int s, float& ds, float& dm) {
            int a, m;
            if (s < 4) {
                a = sc(s) & 63;
                m = sc(s + 4) & 63;
            } else {
                a = (sc(s + 4) & 0xF) | ((sc(s - 4) >> 6) << 4);
                m = (sc(s + 4) >> 4) | ((sc(s) >> 6) << 4);
            }
            ds = d * float(a);
            dm = j == 0 ? dmin * float(m) : 0.0f;
        };
        float d0, m0, d1, m1;
        scale_min(2 * c, d0, m0);
        scale_min(2 * c + 1, d1, m1);
        const int64_t a0 = b * 8 + 2 * c;  // activation block of sub-block 2c
#pragma unroll
        for (int t = 0; t < TM; ++t) {
            if (t < n_tok) {
                const int* xq = x[t].q + a0 * 8 + 2 * j;
                const float2 x0 = x[t].ds[a0], x1 = x[t].ds[a0 + 1];
                const int s0 = dot4(int(lo0), xq[0], dot4(int(lo1), xq[1], 0));
                const int s1 = dot4(int(hi0), xq[8], dot4(int(hi1), xq[9], 0));
                acc[t] += d0 * x0.x * float(s0) - m0 * x0.y + d1 * x1.x * float(s1) - m1 * x1.y;
            }
        }
    }
};
template <>
struct Q8Dot<DType::Q4_K> : Q8DotK45<false> {};
template <>
struct Q8Dot<DType::Q5_K> : Q8DotK45<true> {};

// Q6_K super-block of 256 (210 bytes) {ql[128], qh[64], int8 scales[16], d}: item k (0..15) =
// half h = k / 8, positions l = 4i..4i+3 (i = k % 8) of its four quarters: quarter q's low bits
// from ql[64h + 32(q & 1) + l] (high nibble when q >= 2), top bits from bits 2q of
// qh[32h + l], scale sc[8h + l / 16 + 2q]; activation block 8b + 4h + q, word i.
template <>
struct Q8Dot<DType::Q6_K> {
    static constexpr int kWeights = 256, kItems = 16, kBytes = 210, kAlign = 2;
    template <int TM>
    __device__ static void dot(const uint8_t* row, int64_t b, int k, const Act* x, int n_tok,
                               float (&acc)[TM]) {
        const uint8_t* blk = row + b * kBytes;
        const int h = k / 8, i = k % 8;
        const uint32_t la = uint32_t(word_at(blk + 64 * h, i));
        const uint32_t lb = uint32_t(word_at(blk + 64 * h + 32, i));
        const uint32_t qh = uint32_t(word_at(blk + 128 + 32 * h, i));
        const int v0 = minus32((la & 0x0F0F0F0Fu) | ((qh & 0x03030303u) << 4));
        const int v1 = minus32((lb & 0x0F0F0F0Fu) | (((qh >> 2) & 0x03030303u) << 4));
        const int v2 = minus32(((la >> 4) & 0x0F0F0F0Fu) | (((qh >> 4) & 0x03030303u) << 4));
        const int v3 = minus32(((lb >> 4) & 0x0F0F0F0Fu) | (((qh >> 6) & 0x03030303u) << 4));
        const auto* sc = reinterpret_cast<const int8_t*>(blk + 192 + 8 * h + i / 4);
        const float d = f16_at(blk + 208);
        const float s0 = d * float(sc[0]), s1 = d * float(sc[2]), s2 = d * float(sc[4]),
                    s3 = d * float(sc[6]);
        const int64_t a0 = b * 8 + 4 * h;  // activation block of quarter 0
#pragma unroll
        for (int t = 0; t < TM; ++t) {
            if (t < n_tok) {
                const int* xq = x[t].q + a0 * 8 + i;
                const float2* ds = x[t].ds + a0;
                acc[t] += s0 * ds[0].x * float(dot4(v0, xq[0], 0)) +
                          s1 * ds[1].x * float(dot4(v1, xq[8], 0)) +
                          s2 * ds[2].x * float(dot4(v2, xq[16], 0)) +
                          s3 * ds[3].x * float(dot4(v3, xq[24], 0));
            }
        }
    }
};

// grid: ceil(n_tok * n_in / 32 / 8) blocks of 256 threads, a 32-lane group per activation
// block. qs [n_tok, n_in] int8, ds [n_tok, n_in / 32] (d, s).
__global__ void __launch_bounds__(kQuantThreads)
    k_quantize_q8(const float* x, int64_t n_blocks, int8_t* qs, float2* ds) {
    const int64_t i = int64_t(blockIdx.x) * kQuantThreads + threadIdx.x;
    const int64_t blk = i / kQ8Block;
    // Lanes past the end keep going to the shuffles with a zero.
    const float v = blk < n_blocks ? x[i] : 0.0f;
    const float amax = group_max(fabsf(v));
    const float d = amax / 127.0f;
    const int q = amax > 0.0f ? int(rintf(v / d)) : 0;
    const float sum = group_sum(float(q));  // exact: |sum| <= 32 * 127
    if (blk >= n_blocks) return;
    qs[i] = int8_t(q);
    if (int(threadIdx.x) % kLaneGroup == 0) ds[blk] = make_float2(d, d * sum);
}

// One block of kQ8Threads per output row; out[t, row] for t < n_tok <= TM.
template <DType T, int TM>
__global__ void __launch_bounds__(kQ8Threads)
    k_matvec_q8(const uint8_t* __restrict__ w, int64_t row_stride, int64_t n_in, int64_t n_out,
                const int8_t* __restrict__ xq, const float2* __restrict__ xds, int n_tok,
                const float* __restrict__ bias, float* __restrict__ out) {
    using D = Q8Dot<T>;
    __shared__ float part[kQ8Threads / kLaneGroup][TM];
    const int64_t row = blockIdx.x;
    const uint8_t* wr = w + row * row_stride;
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
    const int64_t n_items = n_in / D::kWeights * D::kItems;
    // Two items per trip: the second item's loads issue before the first one's dots wait.
#pragma unroll 2
    for (int64_t it = threadIdx.x; it < n_items; it += kQ8Threads)
        D::template dot<TM>(wr, it / D::kItems, int(it % D::kItems), x, n_tok, acc);
    const int g = int(threadIdx.x) / kLaneGroup, lane = int(threadIdx.x) % kLaneGroup;
#pragma unroll
    for (int t = 0; t < TM; ++t) {
        const float v = group_sum(acc[t]);
        if (lane == 0) part[g][t] = v;
    }
    __syncthreads();
    if (threadIdx.x < TM && int(threadIdx.x) < n_tok) {
        const int t = int(threadIdx.x);
        float v = 0.0f;
#pragma unroll
        for (int i = 0; i < kQ8Threads / kLaneGroup; ++i) v += part[i][t];
        out[int64_t(t) * n_out + row] = v + (bias ? bias[row] : 0.0f);
    }
}

template <DType T>
bool matvec_q8_as(const void* w, int64_t n_in, int64_t n_out, const void* q8, int64_t n_tok,
                  const float* bias, float* out, hipStream_t s) {
    using D = Q8Dot<T>;
    const auto stride = static_cast<int64_t>(row_bytes(T, static_cast<uint64_t>(n_in)));
    if (reinterpret_cast<uintptr_t>(w) % D::kAlign != 0 || stride % D::kAlign != 0) return false;
    const auto* xq = static_cast<const int8_t*>(q8);
    const auto* xds = reinterpret_cast<const float2*>(xq + n_tok * n_in);
    const dim3 grid(static_cast<unsigned>(n_out)), block(kQ8Threads);
    const auto* wb = static_cast<const uint8_t*>(w);
    const int nt = int(n_tok);
    if (n_tok == 1)
        hipLaunchKernelGGL((k_matvec_q8<T, 1>), grid, block, 0, s, wb, stride, n_in, n_out, xq, xds,
                           nt, bias, out);
    else if (n_tok == 2)
        hipLaunchKernelGGL((k_matvec_q8<T, 2>), grid, block, 0, s, wb, stride, n_in, n_out, xq, xds,
                           nt, bias, out);
    else if (n_tok <= 4)
        hipLaunchKernelGGL((k_matvec_q8<T, 4>), grid, block, 0, s, wb, stride, n_in, n_out, xq, xds,
                           nt, bias, out);
    else
        hipLaunchKernelGGL((k_matvec_q8<T, 8>), grid, block, 0, s, wb, stride, n_in, n_out, xq, xds,
                           nt, bias, out);
    return true;
}

}  // namespace

bool q8_matvec_supported(DType type, int64_t n_in, int64_t n_out, int64_t n_tok) {
    if (n_tok < 1 || n_tok > kMatvecMaxTokens || n_in < 1 || n_out < 1 || n_out > kMaxGridX)
        return false;
    switch (type) {
        case DType::Q4_0:
        case DType::Q8_0:
            return n_in % 32 == 0;
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

bool launch_matvec_q8(DType type, const void* w, int64_t n_in, int64_t n_out, const void* q8,
                      int64_t n_tok, const float* bias, float* out, hipStream_t s) {
    if (!w || !q8 || !out || !q8_matvec_supported(type, n_in, n_out, n_tok)) return false;
    switch (type) {
        case DType::Q4_0:
            return matvec_q8_as<DType::Q4_0>(w, n_in, n_out, q8, n_tok, bias, out, s);
        case DType::Q8_0:
            return matvec_q8_as<DType::Q8_0>(w, n_in, n_out, q8, n_tok, bias, out, s);
        case DType::Q4_K:
            return matvec_q8_as<DType::Q4_K>(w, n_in, n_out, q8, n_tok, bias, out, s);
        case DType::Q5_K:
            return matvec_q8_as<DType::Q5_K>(w, n_in, n_out, q8, n_tok, bias, out, s);
        case DType::Q6_K:
            return matvec_q8_as<DType::Q6_K>(w, n_in, n_out, q8, n_tok, bias, out, s);
        default:
            return false;
    }
}

}  // namespace tandem::hip
