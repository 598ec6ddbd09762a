#pragma once
// The int8-dot items of the decode matvec over quantised activations (hip_matvec_q8.hip): for
// each weight type, how one thread's item (2-4 weight words) widens its nibbles to int8 and
// dots them with the activation words. A header so the host can run the same code against
// the quantiser (tests/backend-hip/hip_speed_paths_test.cpp, with plain C++ stand-ins for the
// few device names used), without a GPU.
#include <cstdint>

#include "hip_packed.h"
#include "hip_weight_types.h"
#include "tandem/common/dtype.h"

// Loop unrolling where a GPU compiler reads this; nothing for the host test's compiler.
#if defined(__HIPCC__) || defined(__CUDACC__)
#define TANDEM_Q8_UNROLL _Pragma("unroll")
#else
#define TANDEM_Q8_UNROLL
#endif

namespace tandem::hip {

constexpr int kQ8Block = 32;  // activations per scale

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
// Quant word i (0..3) of a Q4_0 block's 16 bytes into the block's int8 weights minus 8: word i
// of weights 0..15 (low nibbles) and of weights 16..31 (high nibbles).
__device__ inline void q4_0_words(uint32_t q, int i, int (&w)[8]) {
    w[i] = minus8(q & 0x0F0F0F0Fu);
    w[4 + i] = minus8((q >> 4) & 0x0F0F0F0Fu);
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

// Two consecutive 2-byte aligned blocks of `bytes` (18: Q4_0, 34: Q8_0) are 4-byte aligned
// (rows are whole pairs), so a pair is read as whole words (no 16-bit loads): v[0..words).
// Block 0's scale is v[0]'s low half and its quants start at byte 2 (words funnel-shifted by
// 16 bits); block 1's scale is the high half of word Bytes/4/2 and its quants whole words.
template <int Bytes>
__device__ inline void load_pair(const uint8_t* p, uint32_t (&v)[Bytes / 4]) {
    const auto* w = reinterpret_cast<const uint32_t*>(p);
    TANDEM_Q8_UNROLL
    for (int i = 0; i < Bytes / 4; ++i) v[i] = w[i];
}
// Quant word i (0 .. (Bytes-2)/4) of block 0 of a loaded pair.
template <int Bytes>
__device__ inline uint32_t first_quants(const uint32_t (&v)[Bytes / 4], int i) {
    return (v[i] >> 16) | (v[i + 1] << 16);
}
// The int8 products of weight words w[0..7] with activation words a (w[0..3]) and b (w[4..7]).
__device__ inline int dot8(const int (&w)[8], const int4& a, const int4& b) {
    return dot4(
        w[0], a.x,
        dot4(w[1], a.y,
             dot4(w[2], a.z,
                  dot4(w[3], a.w,
                       dot4(w[4], b.x, dot4(w[5], b.y, dot4(w[6], b.z, dot4(w[7], b.w, 0))))))));
}

// Activation words 16p .. 16p + 15 (blocks 2p, 2p + 1) and their (d, s), as 16-byte loads.
__device__ inline void load_act_pair(const Act& x, int64_t p, int4 (&q)[4], float4& ds) {
    const auto* q4 = reinterpret_cast<const int4*>(x.q + p * 16);
    TANDEM_Q8_UNROLL
    for (int i = 0; i < 4; ++i) q[i] = q4[i];
    ds = *reinterpret_cast<const float4*>(x.ds + 2 * p);
}

// Adds a block pair's int8 weights w[e] (scales d0, d1) dotted with activation blocks 2b, 2b + 1
// to acc[t] for the n_tok <= TM tokens.
template <int TM>
__device__ inline void pair_dot(const int (&w)[2][8], float d0, float d1, int64_t b, const Act* x,
                                int n_tok, float (&acc)[TM]) {
    TANDEM_Q8_UNROLL
    for (int t = 0; t < TM; ++t) {
        if (t < n_tok) {
            int4 q[4];
            float4 ds;
            load_act_pair(x[t], b, q, ds);
            const int s0 = dot8(w[0], q[0], q[1]), s1 = dot8(w[1], q[2], q[3]);
            acc[t] += d0 * ds.x * float(s0) + d1 * ds.z * float(s1);
        }
    }
}

// Q4_0 {d, qs[16]}, items of two blocks (36 bytes, 9 words): block e's byte i holds weight i
// (low nibble) and 16 + i (high nibble); activation words 0-3 / 4-7 of block e.
template <>
struct Q8Dot<DType::Q4_0> {
    static constexpr int kWeights = 64, kItems = 1, kBytes = 36, kAlign = 4;
    template <int TM>
    __device__ static void dot(const uint8_t* row, int64_t b, int, const Act* x, int n_tok,
                               float (&acc)[TM]) {
        uint32_t v[9];
        load_pair<36>(row + b * kBytes, v);
        const float d0 = f16_bits_to_f32(uint16_t(v[0] & 0xffffu));
        const float d1 = f16_bits_to_f32(uint16_t(v[4] >> 16));
        // Block e's weights 0..15 (low nibbles) then 16..31 (high nibbles), minus 8.
        int w[2][8];
        TANDEM_Q8_UNROLL
        for (int i = 0; i < 4; ++i) {
            q4_0_words(first_quants<36>(v, i), i, w[0]);
            q4_0_words(v[5 + i], i, w[1]);
        }
        pair_dot<TM>(w, d0, d1, b, x, n_tok, acc);
    }
};

// Q8_0 {d, int8 qs[32]}, items of two blocks (68 bytes, 17 words).
template <>
struct Q8Dot<DType::Q8_0> {
    static constexpr int kWeights = 64, kItems = 1, kBytes = 68, kAlign = 4;
    template <int TM>
    __device__ static void dot(const uint8_t* row, int64_t b, int, const Act* x, int n_tok,
                               float (&acc)[TM]) {
        uint32_t v[17];
        load_pair<68>(row + b * kBytes, v);
        const float d0 = f16_bits_to_f32(uint16_t(v[0] & 0xffffu));
        const float d1 = f16_bits_to_f32(uint16_t(v[8] >> 16));
        int w[2][8];
        TANDEM_Q8_UNROLL
        for (int i = 0; i < 8; ++i) {
            w[0][i] = int(first_quants<68>(v, i));
            w[1][i] = int(v[9 + i]);
        }
        pair_dot<TM>(w, d0, d1, b, x, n_tok, acc);
    }
};

// Repacked Q4_0 / Q8_0 (hip_packed.h: groups of 8 blocks, [8 f16 scales][8 x Quant bytes]):
// items of one block, b % 8 of group b / 8: its scale a half-word, its quants one (Q4_0) or two
// (Q8_0) 16-byte loads. One block, not a pair as in the file layout: a warp's loads of one
// instruction then span half the bytes (the activation words of 32 lanes: 1 KiB, not 2): fewer
// L1 wavefronts per weight byte, which bound this kernel on the H200 (8B decode: +2 % Q4_0,
// +5 % Q8_0 over the file layout's block pairs; docs/hip.md).
template <int Quant>
struct Q8DotPacked {
    static constexpr int kWeights = 32, kItems = 1, kAlign = 16;
    template <int TM>
    __device__ static void dot(const uint8_t* row, int64_t b, int, const Act* x, int n_tok,
                               float (&acc)[TM]) {
        const uint8_t* grp = row + (b / 8) * (16 + 8 * Quant);
        const float d = f16_bits_to_f32(reinterpret_cast<const uint16_t*>(grp)[b % 8]);
        const auto* q = reinterpret_cast<const uint4*>(grp + 16 + (b % 8) * Quant);
        int w[8];
        if constexpr (Quant == 16) {
            const uint4 v = q[0];
            q4_0_words(v.x, 0, w);
            q4_0_words(v.y, 1, w);
            q4_0_words(v.z, 2, w);
            q4_0_words(v.w, 3, w);
        } else {
            const uint4 a = q[0], c = q[1];
            w[0] = int(a.x), w[1] = int(a.y), w[2] = int(a.z), w[3] = int(a.w);
            w[4] = int(c.x), w[5] = int(c.y), w[6] = int(c.z), w[7] = int(c.w);
        }
        TANDEM_Q8_UNROLL
        for (int t = 0; t < TM; ++t) {
            if (t < n_tok) {
                const auto* xq = reinterpret_cast<const int4*>(x[t].q + b * 8);
                acc[t] += d * x[t].ds[b].x * float(dot8(w, xq[0], xq[1]));
            }
        }
    }
};
template <>
struct Q8Dot<kQ4_0R> : Q8DotPacked<16> {};
template <>
struct Q8Dot<kQ8_0R> : Q8DotPacked<32> {};

// Q4_K/Q5_K super-block of 256 {d, dmin, scales[12], (Q5_K: qh[32]), qs[128]}: item k (0..7) =
// chunk c = k / 2 (qs bytes 32c..32c+31), bytes 16j..16j+15 of it (j = k % 2, one 16-byte load):
// the low nibbles are positions 16j.. of sub-block 2c, the high nibbles of sub-block 2c + 1;
// Q5_K's fifth bits are bits 2c / 2c + 1 of qh bytes 16j..16j+15. Weight = d * scale * q - dmin
// * min, so a sub-block adds d * scale * d_x * sum(q q_x) - dmin * min * s_x; the min term once,
// by the j == 0 item. (Items of 16 bytes, not 8: the header and the 6-bit scales are decoded
// once per 32 weights of a lane instead of per 16.)
template <bool Five>
struct Q8DotK45 {
    static constexpr int kWeights = 256, kItems = 8, kBytes = Five ? 176 : 144, kAlign = 16;
    template <int TM>
    __device__ static void dot(const uint8_t* row, int64_t b, int k, const Act* x, int n_tok,
                               float (&acc)[TM]) {
        const uint8_t* blk = row + b * kBytes;
        const int c = k / 2, j = k % 2;
        const uint4 hdr = *reinterpret_cast<const uint4*>(blk);
        const uint4 qs = *reinterpret_cast<const uint4*>(blk + (Five ? 48 : 16) + 32 * c + 16 * j);
        uint32_t lo[4] = {qs.x & 0x0F0F0F0Fu, qs.y & 0x0F0F0F0Fu, qs.z & 0x0F0F0F0Fu,
                          qs.w & 0x0F0F0F0Fu};
        uint32_t hi[4] = {(qs.x >> 4) & 0x0F0F0F0Fu, (qs.y >> 4) & 0x0F0F0F0Fu,
                          (qs.z >> 4) & 0x0F0F0F0Fu, (qs.w >> 4) & 0x0F0F0F0Fu};
        if constexpr (Five) {
            const uint4 qh4 = *reinterpret_cast<const uint4*>(blk + 16 + 16 * j);
            const uint32_t qh[4] = {qh4.x, qh4.y, qh4.z, qh4.w};
            TANDEM_Q8_UNROLL
            for (int i = 0; i < 4; ++i) {
                lo[i] |= ((qh[i] >> (2 * c)) & 0x01010101u) << 4;
                hi[i] |= ((qh[i] >> (2 * c + 1)) & 0x01010101u) << 4;
            }
        }
        const float d = f16_bits_to_f32(uint16_t(hdr.x & 0xffffu));
        const float dmin = f16_bits_to_f32(uint16_t(hdr.x >> 16));
        // Sub-block s's scale, and its min for the j == 0 item only.
        auto scale_min = [&](int s, float& ds, float& dm) {
            int a, m;
            k4_scale_min(hdr, s, a, m);
            ds = d * float(a);
            dm = j == 0 ? dmin * float(m) : 0.0f;
        };
        float d0, m0, d1, m1;
        scale_min(2 * c, d0, m0);
        scale_min(2 * c + 1, d1, m1);
        const int64_t a0 = b * 8 + 2 * c;  // activation block of sub-block 2c
        TANDEM_Q8_UNROLL
        for (int t = 0; t < TM; ++t) {
            if (t < n_tok) {
                // Words 4j.. of activation blocks a0 and a0 + 1: 16-byte aligned.
                const int4 xa = *reinterpret_cast<const int4*>(x[t].q + a0 * 8 + 4 * j);
                const int4 xb = *reinterpret_cast<const int4*>(x[t].q + a0 * 8 + 8 + 4 * j);
                const float4 xd = *reinterpret_cast<const float4*>(x[t].ds + a0);
                const float2 x0{xd.x, xd.y}, x1{xd.z, xd.w};
                const int s0 =
                    dot4(int(lo[0]), xa.x,
                         dot4(int(lo[1]), xa.y, dot4(int(lo[2]), xa.z, dot4(int(lo[3]), xa.w, 0))));
                const int s1 =
                    dot4(int(hi[0]), xb.x,
                         dot4(int(hi[1]), xb.y, dot4(int(hi[2]), xb.z, dot4(int(hi[3]), xb.w, 0))));
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
        TANDEM_Q8_UNROLL
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

}  // namespace tandem::hip
