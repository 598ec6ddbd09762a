#pragma once
// One tile of 128 rows x Toks (64 or 128) tokens of a matmul on the matrix units (hip_mma.h), the
// body of the dense prefill matmul (hip_matmul_mma.hip) and of the expert FFN's (hip_moe_mma.hip,
// 64 tokens): y[t, o] = W[o, :] . x[t, :] for rows m0.. of W (n_rows rows of row_stride bytes)
// and the tile's activation rows, which the caller names (a dense block its consecutive tokens,
// an expert's block the slots routed to it). Per step of 64 inputs each thread dequantises one
// 32-weight group of one row and Toks / 32 runs of 8 activations, as f16 into shared memory
// (16-byte stores; rows padded to 144 bytes, so the rows 8 lanes store or load at once fall on
// distinct banks); the waves then multiply their part of the tile (wave32: 8 waves of 32 rows x
// Toks / 2 tokens; wave64: 4 of 64 x Toks / 2) in 16 x 16 x 16 fragments. Weights and
// activations are rounded to f16, the sums stay f32 (the Vulkan backend's matmul_coopmat.comp
// does the same); activations beyond f16's range saturate at +-65504. Mode bits: kMmaX16, the
// activation rows are f16 already (launch_to_f16: one 16-byte load for 8 where the f32 rows take
// two and a conversion); kMmaF32Decode, repacked Q4_0 / Q8_0 through f32 like the other types
// (else group_f16).
#include <cstdint>

#include "hip_blocks.h"
#include "hip_mma.h"

namespace tandem::hip {

inline constexpr int kMmaTileRows = 128, kMmaTileToks = 64, kMmaTileThreads = 256;
inline constexpr int kMmaX16 = 1, kMmaF32Decode = 2;  // mma_tile's Mode bits

// Activation rows of the tile thread tid loads: tokens (tid + 256 r) / 8 for r = 0, 1.
__device__ inline int mma_tile_token(int tid, int r) {
    return (tid + kMmaTileThreads * r) / 8;
}

#if TANDEM_MMA_KIND != 0  // this device compilation has matrix units

__device__ inline uint32_t half2_bits(__half2 h) {
    uint32_t u;
    __builtin_memcpy(&u, &h, 4);
    return u;
}
__device__ inline __half2 bits_half2(uint32_t u) {
    __half2 h;
    __builtin_memcpy(&h, &u, 4);
    return h;
}

// A repacked Q4_0 / Q8_0 group (its Raw: 16 / 32 quant bytes, d) as 32 f16 in tile order. Each
// pair of weights: two bytes side by side (__byte_perm), their nibbles or int8s made 1024 + q
// by the f16 exponent bits, less 1032 / 1152 (exact), times d (rounded once: the bits of d * q
// in f32 rounded to f16, as the f32 decode then pack8_half). ~5 instructions a pair, where the
// f32 decode spends ~5 a weight (8B pp512 +4 % on the H200, Q4_0 and Q8_0).
template <DType T>
__device__ inline void group_f16(const typename Blocks<T>::Raw& r, uint4* dst) {
    const __half2 d2 = __float2half2_rn(r.d);
    uint32_t o[16];
#pragma unroll
    for (int m = 0; m < 16; ++m) {
        // weight 2m, 2m + 1: Q4_0 bytes 2m % 16 .. (low nibbles for m < 8, then high); Q8_0 2m..
        const uint32_t sel = m % 2 ? 0x4342u : 0x4140u;
        uint32_t t;
        if constexpr (T == kQ4_0R)
            t = ((__byte_perm(r.q[(m % 8) / 2], 0, sel) >> (m >= 8 ? 4 : 0)) & 0x000F000Fu);
        else
            t = __byte_perm(r.q[m / 2], 0, sel) ^ 0x00800080u;
        const __half2 off = __float2half2_rn(T == kQ4_0R ? 1032.0f : 1152.0f);
        o[m] = half2_bits(__hmul2(__hsub2(bits_half2(t | 0x64006400u), off), d2));
    }
#pragma unroll
    for (int c = 0; c < 4; ++c)
        dst[c] = make_uint4(o[4 * c], o[4 * c + 1], o[4 * c + 2], o[4 * c + 3]);
}

__device__ inline float to_f16_range(float v) {
    return fminf(fmaxf(v, -65504.0f), 65504.0f);
}

// xrow[r]: the activation row of token mma_tile_token(tid, r) (n_in floats, or halves with
// kMmaX16; 16-byte aligned), or null where the tile has no such token (zeros). store(o, tok, v)
// for every row o < n_rows of the tile and every token 0..Toks - 1 (the caller drops the tokens
// it does not have).
template <DType T, int Mode, int Toks = kMmaTileToks, class Store>
__device__ inline void mma_tile(const uint8_t* w, int64_t n_in, int64_t row_stride, int64_t n_rows,
                                int64_t m0, const void* const (&xrow)[Toks / 32], Store&& store) {
    static_assert(Toks == 64 || Toks == 128);
    constexpr bool kX16 = (Mode & kMmaX16) != 0;
    constexpr bool kHalfDecode = (Mode & kMmaF32Decode) == 0 && (T == kQ4_0R || T == kQ8_0R);
    constexpr int kRows = kMmaTileRows, kToks = Toks, kThreads = kMmaTileThreads;
    constexpr int kRuns = kToks / 32;  // runs of 8 activations a thread stages each step
    constexpr int kStepK = 64;
    constexpr int kLd = kStepK + 8;  // halves a padded tile row: 144 bytes
    constexpr int kWaves = kThreads / kMmaWave, kWaveRows = kRows / (kWaves / 2);
    constexpr int kWaveToks = kToks / 2;
    constexpr int FM = kWaveRows / 16, FN = kWaveToks / 16;  // fragments a wave: FM x FN of 16 x 16
    __shared__ __align__(16) uint16_t ws[kRows * kLd];       // [row][k] f16 bits
    __shared__ __align__(16) uint16_t xs[kToks * kLd];       // [token][k] f16 bits
    const int tid = int(threadIdx.x), wave = tid / kMmaWave, lane = tid % kMmaWave;
    const int wm = (wave % (kWaves / 2)) * kWaveRows, wn = (wave / (kWaves / 2)) * kWaveToks;
    MmaAcc acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) mma_zero(acc[i][j]);
    // The 32 weights this thread dequantises each step; rows past the end read the last row
    // (valid memory) and are never written out.
    const int my_row = tid % kRows, my_half = tid / kRows;
    const uint8_t* wrow = w + (m0 + my_row < n_rows ? m0 + my_row : n_rows - 1) * row_stride;
    // A step's global reads, into registers: the weight group and two runs of 8 activations
    // (64 tokens x 64 inputs, 8 threads on a token). Issuing them a step ahead, before the
    // products of the step before, measured 3 % slower on the H200 (session 20).
    Group32<T> group;
    bool group_live = false;
    [[maybe_unused]] float4 xr[kRuns][2];  // f32 rows
    [[maybe_unused]] uint4 xh[kRuns];      // kX16 rows
    auto load_step = [&](int64_t k0) {
        const int64_t k = k0 + 32 * my_half;
        group_live = k < n_in;
        if (group_live) group.load(wrow, k);
#pragma unroll
        for (int r = 0; r < kRuns; ++r) {
            const int c = (tid + kThreads * r) % 8;
            const int64_t col = k0 + 8 * c;
            if constexpr (kX16) {
                xh[r] = make_uint4(0, 0, 0, 0);
                if (xrow[r] && col < n_in)
                    xh[r] = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(xrow[r]) +
                                                            col);
            } else {
                xr[r][0] = xr[r][1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (xrow[r] && col < n_in) {
                    const auto* p =
                        reinterpret_cast<const float4*>(static_cast<const float*>(xrow[r]) + col);
                    xr[r][0] = p[0], xr[r][1] = p[1];
                }
            }
        }
    };
    auto store_acts = [&] {
#pragma unroll
        for (int r = 0; r < kRuns; ++r) {
            const int i = tid + kThreads * r, tok = i / 8, c = i % 8;
            if constexpr (kX16) {
                *reinterpret_cast<uint4*>(xs + tok * kLd + 8 * c) = xh[r];
                continue;
            }
            const float4 a = xr[r][0], b = xr[r][1];
            const float v[8] = {to_f16_range(a.x), to_f16_range(a.y), to_f16_range(a.z),
                                to_f16_range(a.w), to_f16_range(b.x), to_f16_range(b.y),
                                to_f16_range(b.z), to_f16_range(b.w)};
            *reinterpret_cast<uint4*>(xs + tok * kLd + 8 * c) = pack8_half(v);
        }
    };
    auto store_weights = [&] {
        auto* dst = reinterpret_cast<uint4*>(ws + my_row * kLd + 32 * my_half);
        if constexpr (kHalfDecode) {
            if (group_live) {
                group_f16<T>(group.raw, dst);
            } else {
#pragma unroll
                for (int c = 0; c < 4; ++c) dst[c] = make_uint4(0, 0, 0, 0);
            }
        } else {
            // 8 weights at a time: 8 floats live, not 32, beside the sums.
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                float v[8];
                if (group_live) {
                    group.decode8(c, v);
                } else {
#pragma unroll
                    for (int e = 0; e < 8; ++e) v[e] = 0.0f;
                }
                dst[c] = pack8_half(v);
            }
        }
    };
    for (int64_t k0 = 0; k0 < n_in; k0 += kStepK) {
        load_step(k0);
        // Decoded through f32 (or beside f32 activations), the weights go after the
        // activations, whose registers are free by then (the 128-token tile's 64 sums stay live
        // throughout: Q4_K spilled 132 bytes the other way round). Decoded straight to f16
        // beside f16 activations they go first: the other way round was 5-8 % slower for Q4_0
        // and Q8_0 (H200, docs/hip.md, session 25).
        if constexpr (kHalfDecode && kX16) {
            store_weights();
            store_acts();
        } else {
            store_acts();
            store_weights();
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kStepK; kk += 16) {
            MmaA a[FM];
#pragma unroll
            for (int i = 0; i < FM; ++i) mma_load_a(a[i], ws + (wm + 16 * i) * kLd + kk, kLd, lane);
#pragma unroll
            for (int j = 0; j < FN; ++j) {
                MmaB b;
                mma_load_b(b, xs + (wn + 16 * j) * kLd + kk, kLd, lane);
#pragma unroll
                for (int i = 0; i < FM; ++i) mma_run(acc[i][j], a[i], b);
            }
        }
        __syncthreads();  // the tiles are rewritten by the next step
    }
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
#pragma unroll
            for (int e = 0; e < kMmaAccItems; ++e) {
                const int64_t o = m0 + wm + 16 * i + mma_acc_m(lane, e);
                if (o < n_rows) store(o, wn + 16 * j + mma_acc_n(lane, e), acc[i][j].v[e]);
            }
}
#endif

}  // namespace tandem::hip
