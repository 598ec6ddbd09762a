#pragma once
// The int8-dot items of the decode matvec over quantised activations (hip_matvec_q8.hip): for
// each weight type, how one thread's item (1-4 weight words) widens its nibbles to int8 and
// dots them with the activation words (hip_q8_layout.h). A header so the host can run the same code
// against the quantiser (tests/backend-hip/hip_speed_paths_test.cpp, with plain C++ stand-ins for
// the few device names used), without a GPU.
#include <cstdint>

#include "hip_packed.h"
#include "hip_q8_layout.h"
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
// Bytes 0..63 -> bytes minus 32 (Q6_K's offset): +0x60 keeps every byte below 0x100, the xor
// flips the sign bit, i.e. subtracts 0x80.
__device__ inline int minus32(uint32_t v) {
    return int((v + 0x60606060u) ^ 0x80808080u);
}

// The q8 activations of one token: int8 values in the halves layout (q8_half_index), and
// (d, s) per 32 values [n_in / 32].
struct Act {
    const int4* q;
    const float2* ds;
};

// Activation block b's half h (values 16h..16h+15) as one 16-byte load.
__device__ inline int4 act_half(const Act& x, int b, int h) {
    return x.q[q8_half_index(b, h)];
}
// Activation word w (values 4w..4w+3, 0 <= w < 8) of block b.
__device__ inline int act_word(const Act& x, int b, int w) {
    return reinterpret_cast<const int*>(x.q + q8_half_index(b, w / 4))[w % 4];
}

// One weight type's items: weights() decodes item k of block b of a row (its int8 weights and
// scales, in registers), acts() loads what one token's activations bring to that item, dot()
// is their scaled product. The matvec decodes an item's weights once per row and its
// activations once per token, and meets every pair.
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
// A Q4_0 block's quant word i (0..3) as its nibbles, not offset: word i of weights 0..15 (low
// nibbles) and of weights 16..31 (high nibbles). Q4_0's -8 is applied through the activation
// block's sum s (d_x * sum(q_x)): sum((n - 8) q_x) d_x = d_x * sum(n q_x) - 8 s, two float
// operations per block instead of two integer ones per weight word.
__device__ inline void q4_0_words(uint32_t q, int i, int (&w)[8]) {
    w[i] = int(q & 0x0F0F0F0Fu);
    w[4 + i] = int((q >> 4) & 0x0F0F0F0Fu);
}

// One block's int8 weights and scale (a Q4_0 block's: its nibbles, the -8 left to block_dot).
struct BlockW {
    int q[8];
    float d;
};
// One activation block: its two halves and (d, s).
struct BlockA {
    int4 lo, hi;
    float2 ds;
};
__device__ inline BlockA block_acts(const Act& x, int b) {
    return {act_half(x, b, 0), act_half(x, b, 1), x.ds[b]};
}
template <bool Offset8>
__device__ inline float block_dot(const BlockW& w, const BlockA& a) {
    const float s = float(dot8(w.q, a.lo, a.hi));
    return Offset8 ? w.d * (a.ds.x * s - 8.0f * a.ds.y) : w.d * a.ds.x * s;
}

// Q4_0 {d, qs[16]} / Q8_0 {d, int8 qs[32]} in the file layout (weights used in place): items
// of two blocks (36 / 68 bytes, 9 / 17 words), read as whole words.
template <int Bytes>
struct Q8DotPair {
    static constexpr int kWeights = 64, kItems = 1, kAlign = 4;
    static constexpr bool kQ4 = Bytes == 36;
    struct W {
        BlockW blk[2];
    };
    struct A {
        BlockA blk[2];
    };
    __device__ static W weights(const uint8_t* row, int b, int) {
        uint32_t v[Bytes / 4];
        load_pair<Bytes>(row + int64_t(b) * Bytes, v);
        W w;
        w.blk[0].d = f16_bits_to_f32(uint16_t(v[0] & 0xffffu));
        w.blk[1].d = f16_bits_to_f32(uint16_t(v[Bytes / 8] >> 16));
        if constexpr (kQ4) {
            TANDEM_Q8_UNROLL
            for (int i = 0; i < 4; ++i) {
                q4_0_words(first_quants<Bytes>(v, i), i, w.blk[0].q);
                q4_0_words(v[5 + i], i, w.blk[1].q);
            }
        } else {
            TANDEM_Q8_UNROLL
            for (int i = 0; i < 8; ++i) {
                w.blk[0].q[i] = int(first_quants<Bytes>(v, i));
                w.blk[1].q[i] = int(v[9 + i]);
            }
        }
        return w;
    }
    __device__ static A acts(const Act& x, int b, int) {
        return {{block_acts(x, 2 * b), block_acts(x, 2 * b + 1)}};
    }
    __device__ static float dot(const W& w, const A& a) {
        return block_dot<kQ4>(w.blk[0], a.blk[0]) + block_dot<kQ4>(w.blk[1], a.blk[1]);
    }
};
template <>
struct Q8Dot<DType::Q4_0> : Q8DotPair<36> {};
template <>
struct Q8Dot<DType::Q8_0> : Q8DotPair<68> {};

// Repacked Q4_0 / Q8_0 (hip_packed.h: groups of 8 blocks, [8 f16 scales][8 x Quant bytes]):
// items of one block, b % 8 of group b / 8: its scale a half-word, its quants one (Q4_0) or two
// (Q8_0) 16-byte loads.
template <int Quant>
struct Q8DotPacked {
    static constexpr int kWeights = 32, kItems = 1, kAlign = 16;
    using W = BlockW;
    using A = BlockA;
    __device__ static W weights(const uint8_t* row, int b, int) {
        const uint8_t* grp = row + int64_t(b / 8) * (16 + 8 * Quant);
        W w;
        w.d = f16_bits_to_f32(reinterpret_cast<const uint16_t*>(grp)[b % 8]);
        const auto* q = reinterpret_cast<const uint4*>(grp + 16 + (b % 8) * Quant);
        if constexpr (Quant == 16) {
            const uint4 v = q[0];
            q4_0_words(v.x, 0, w.q);
            q4_0_words(v.y, 1, w.q);
            q4_0_words(v.z, 2, w.q);
            q4_0_words(v.w, 3, w.q);
        } else {
            const uint4 a = q[0], c = q[1];
            w.q[0] = int(a.x), w.q[1] = int(a.y), w.q[2] = int(a.z), w.q[3] = int(a.w);
            w.q[4] = int(c.x), w.q[5] = int(c.y), w.q[6] = int(c.z), w.q[7] = int(c.w);
        }
        return w;
    }
    __device__ static A acts(const Act& x, int b, int) { return block_acts(x, b); }
    __device__ static float dot(const W& w, const A& a) { return block_dot<Quant == 16>(w, a); }
};
template <>
struct Q8Dot<kQ4_0R> : Q8DotPacked<16> {};
template <>
struct Q8Dot<kQ8_0R> : Q8DotPacked<32> {};

// A Q4_K / Q5_K super-block header's d * scale and dmin * min of sub-blocks 2c and 2c + 1.
struct K45Scales {
    float d0, m0, d1, m1;
};
__device__ inline K45Scales k45_scales(const uint4& hdr, int c) {
    const float d = f16_bits_to_f32(uint16_t(hdr.x & 0xffffu));
    const float dmin = f16_bits_to_f32(uint16_t(hdr.x >> 16));
    // The 6-bit scales and mins as byte pairs, both at once and without a select per byte
    // (k4_scale_min's): for c < 2 bytes 2c, 2c + 1 of scales[0..3] / [4..7]; else the low / high
    // nibbles of bytes 2(c - 2).. of scales[8..11] with the top 2 bits of those of [0..3] /
    // [4..7] (as matvec_q8.comp).
    const int sh = 16 * (c & 1);
    const uint32_t y = hdr.y >> sh, z = hdr.z >> sh, x = hdr.w >> sh;
    const bool upper = c >= 2;
    const uint32_t scp = upper ? (x & 0x0F0Fu) | ((y >> 2) & 0x3030u) : y & 0x3F3Fu;
    const uint32_t mnp = upper ? ((x >> 4) & 0x0F0Fu) | ((z >> 2) & 0x3030u) : z & 0x3F3Fu;
    return {d * float(scp & 0xFFu), dmin * float(mnp & 0xFFu), d * float((scp >> 8) & 0xFFu),
            dmin * float((mnp >> 8) & 0xFFu)};
}

// Q4_K / Q5_K quant words as int8 words: lo the low nibbles (sub-block 2c's weights), hi the
// high ones (2c + 1's); k45_fifth_bits adds Q5_K's fifth bits, bits 2c / 2c + 1 of each qh byte.
template <int N>
__device__ inline void k45_nibbles(const uint32_t (&q)[N], int (&lo)[N], int (&hi)[N]) {
    TANDEM_Q8_UNROLL
    for (int i = 0; i < N; ++i) {
        lo[i] = int(q[i] & 0x0F0F0F0Fu);
        hi[i] = int((q[i] >> 4) & 0x0F0F0F0Fu);
    }
}
template <int N>
__device__ inline void k45_fifth_bits(const uint32_t (&qh)[N], int c, int (&lo)[N], int (&hi)[N]) {
    TANDEM_Q8_UNROLL
    for (int i = 0; i < N; ++i) {
        lo[i] |= int(((qh[i] >> (2 * c)) & 0x01010101u) << 4);
        hi[i] |= int(((qh[i] >> (2 * c + 1)) & 0x01010101u) << 4);
    }
}

// Q4_K/Q5_K super-block of 256 {d, dmin, scales[12], (Q5_K: qh[32]), qs[128]}: item k (0..3) =
// chunk k (qs bytes 32k..32k+31, two 16-byte loads): the low nibbles are sub-block 2k's 32
// weights, the high nibbles sub-block 2k + 1's; Q5_K's fifth bits are bits 2k / 2k + 1 of qh
// bytes 0..31. Weight = d * scale * q - dmin * min, so a sub-block adds d * scale * d_x *
// sum(q q_x) - dmin * min * s_x. (Items of a whole chunk, not 16 bytes of it: the header and the
// 6-bit scales are decoded once per 64 weights instead of per 32, which was most of Q4_K's
// decode time over Q4_0's.) Its activations: activation blocks 8b + 2k and 8b + 2k + 1.
template <bool Five>
struct Q8DotK45 {
    static constexpr int kWeights = 256, kItems = 4, kBytes = Five ? 176 : 144, kAlign = 16;
    struct W {
        int lo[8], hi[8];  // sub-block 2k's / 2k + 1's weights as int8 words
        float d0, m0, d1, m1;
    };
    struct A {
        int4 a0, a1, b0, b1;  // activation block 8b + 2k's halves, block 8b + 2k + 1's
        float4 xd;            // their (d, s), (d, s)
    };
    __device__ static W weights(const uint8_t* row, int b, int c) {
        const uint8_t* blk = row + int64_t(b) * kBytes;
        const uint4 hdr = *reinterpret_cast<const uint4*>(blk);
        const auto* qp = reinterpret_cast<const uint4*>(blk + (Five ? 48 : 16) + 32 * c);
        const uint4 q0 = qp[0], q1 = qp[1];
        const uint32_t q[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        W w;
        k45_nibbles(q, w.lo, w.hi);
        if constexpr (Five) {
            const auto* hp = reinterpret_cast<const uint4*>(blk + 16);
            const uint4 h0 = hp[0], h1 = hp[1];
            const uint32_t qh[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
            k45_fifth_bits(qh, c, w.lo, w.hi);
        }
        const K45Scales sc = k45_scales(hdr, c);
        w.d0 = sc.d0, w.m0 = sc.m0, w.d1 = sc.d1, w.m1 = sc.m1;
        return w;
    }
    __device__ static A acts(const Act& x, int b, int c) {
        const int a0 = b * 8 + 2 * c;  // activation block of sub-block 2c
        return {act_half(x, a0, 0), act_half(x, a0, 1), act_half(x, a0 + 1, 0),
                act_half(x, a0 + 1, 1), *reinterpret_cast<const float4*>(x.ds + a0)};
    }
    __device__ static float dot(const W& w, const A& a) {
        const int s0 = dot8(w.lo, a.a0, a.a1), s1 = dot8(w.hi, a.b0, a.b1);
        return w.d0 * a.xd.x * float(s0) - w.m0 * a.xd.y + w.d1 * a.xd.z * float(s1) -
               w.m1 * a.xd.w;
    }
};
template <>
struct Q8Dot<DType::Q4_K> : Q8DotK45<false> {};
template <>
struct Q8Dot<DType::Q5_K> : Q8DotK45<true> {};

// The experts' Q4_K / Q5_K items (hip_moe_q8.hip, Q8ExpertDot): half a chunk, 32 weights. Their
// rows (768-2048 inputs) have too few 64-weight items for their threads, and the wider items
// took more registers there (H200: moe_ffn 24.4 -> 25.6 us a call; gfx1030: 175 -> 242 VGPRs,
// Q5_K spilling 244-248 bytes a lane).
// Q4_K/Q5_K super-block of 256 {d, dmin, scales[12], (Q5_K: qh[32]), qs[128]}: item k (0..7) =
// chunk c = k / 2 (qs bytes 32c..32c+31), bytes 16j..16j+15 of it (j = k % 2, one 16-byte load):
// the low nibbles are positions 16j.. of sub-block 2c, the high nibbles of sub-block 2c + 1;
// Q5_K's fifth bits are bits 2c / 2c + 1 of qh bytes 16j..16j+15. Weight = d * scale * q - dmin
// * min, so a sub-block adds d * scale * d_x * sum(q q_x) - dmin * min * s_x; the min term once,
// by the j == 0 item. (Items of 16 bytes, not 8: the header and the 6-bit scales are decoded
// once per 32 weights of a lane instead of per 16.) Its activations: half j of blocks 8b + 2c
// and 8b + 2c + 1.
template <bool Five>
struct Q8DotK45Half {
    static constexpr int kWeights = 256, kItems = 8, kBytes = Five ? 176 : 144, kAlign = 16;
    struct W {
        int lo[4], hi[4];
        float d0, m0, d1, m1;
    };
    struct A {
        int4 xa, xb;
        float4 xd;
    };
    __device__ static W weights(const uint8_t* row, int b, int k) {
        const uint8_t* blk = row + int64_t(b) * kBytes;
        const int c = k / 2, j = k % 2;
        const uint4 hdr = *reinterpret_cast<const uint4*>(blk);
        const uint4 qs = *reinterpret_cast<const uint4*>(blk + (Five ? 48 : 16) + 32 * c + 16 * j);
        const uint32_t q[4] = {qs.x, qs.y, qs.z, qs.w};
        W w;
        k45_nibbles(q, w.lo, w.hi);
        if constexpr (Five) {
            const uint4 qh4 = *reinterpret_cast<const uint4*>(blk + 16 + 16 * j);
            const uint32_t qh[4] = {qh4.x, qh4.y, qh4.z, qh4.w};
            k45_fifth_bits(qh, c, w.lo, w.hi);
        }
        const K45Scales sc = k45_scales(hdr, c);
        w.d0 = sc.d0, w.d1 = sc.d1;
        w.m0 = j == 0 ? sc.m0 : 0.0f, w.m1 = j == 0 ? sc.m1 : 0.0f;  // the mins once a sub-block
        return w;
    }
    __device__ static A acts(const Act& x, int b, int k) {
        const int a0 = b * 8 + 2 * (k / 2), j = k % 2;  // activation block of sub-block 2c
        return {act_half(x, a0, j), act_half(x, a0 + 1, j),
                *reinterpret_cast<const float4*>(x.ds + a0)};
    }
    __device__ static float dot(const W& w, const A& a) {
        const int s0 = dot4(w.lo[0], a.xa.x,
                            dot4(w.lo[1], a.xa.y, dot4(w.lo[2], a.xa.z, dot4(w.lo[3], a.xa.w, 0))));
        const int s1 = dot4(w.hi[0], a.xb.x,
                            dot4(w.hi[1], a.xb.y, dot4(w.hi[2], a.xb.z, dot4(w.hi[3], a.xb.w, 0))));
        return w.d0 * a.xd.x * float(s0) - w.m0 * a.xd.y + w.d1 * a.xd.z * float(s1) -
               w.m1 * a.xd.w;
    }
};
// The items the expert FFN's kernels read: the dense ones but Q4_K / Q5_K's halves.
template <DType T>
struct Q8ExpertDot {
    using type = Q8Dot<T>;
};
template <>
struct Q8ExpertDot<DType::Q4_K> {
    using type = Q8DotK45Half<false>;
};
template <>
struct Q8ExpertDot<DType::Q5_K> {
    using type = Q8DotK45Half<true>;
};

// Q6_K super-block of 256 (210 bytes) {ql[128], qh[64], int8 scales[16], d}: item k (0..15) =
// half h = k / 8, positions l = 4i..4i+3 (i = k % 8) of its four quarters: quarter q's low bits
// from ql[64h + 32(q & 1) + l] (high nibble when q >= 2), top bits from bits 2q of
// qh[32h + l], scale sc[8h + l / 16 + 2q]; activation block 8b + 4h + q, word i.
template <>
struct Q8Dot<DType::Q6_K> {
    static constexpr int kWeights = 256, kItems = 16, kBytes = 210, kAlign = 2;
    struct W {
        int v[4];
        float s[4];
    };
    struct A {
        int q[4];
        float d[4];
    };
    __device__ static W weights(const uint8_t* row, int b, int k) {
        const uint8_t* blk = row + int64_t(b) * kBytes;
        const int h = k / 8, i = k % 8;
        const uint32_t la = uint32_t(word_at(blk + 64 * h, i));
        const uint32_t lb = uint32_t(word_at(blk + 64 * h + 32, i));
        const uint32_t qh = uint32_t(word_at(blk + 128 + 32 * h, i));
        W w;
        w.v[0] = minus32((la & 0x0F0F0F0Fu) | ((qh & 0x03030303u) << 4));
        w.v[1] = minus32((lb & 0x0F0F0F0Fu) | (((qh >> 2) & 0x03030303u) << 4));
        w.v[2] = minus32(((la >> 4) & 0x0F0F0F0Fu) | (((qh >> 4) & 0x03030303u) << 4));
        w.v[3] = minus32(((lb >> 4) & 0x0F0F0F0Fu) | (((qh >> 6) & 0x03030303u) << 4));
        const auto* sc = reinterpret_cast<const int8_t*>(blk + 192 + 8 * h + i / 4);
        const float d = f16_at(blk + 208);
        TANDEM_Q8_UNROLL
        for (int q = 0; q < 4; ++q) w.s[q] = d * float(sc[2 * q]);
        return w;
    }
    __device__ static A acts(const Act& x, int b, int k) {
        const int a0 = b * 8 + 4 * (k / 8), i = k % 8;  // activation block of quarter 0
        A a;
        TANDEM_Q8_UNROLL
        for (int q = 0; q < 4; ++q) {
            a.q[q] = act_word(x, a0 + q, i);
            a.d[q] = x.ds[a0 + q].x;
        }
        return a;
    }
    __device__ static float dot(const W& w, const A& a) {
        return w.s[0] * a.d[0] * float(dot4(w.v[0], a.q[0], 0)) +
               w.s[1] * a.d[1] * float(dot4(w.v[1], a.q[1], 0)) +
               w.s[2] * a.d[2] * float(dot4(w.v[2], a.q[2], 0)) +
               w.s[3] * a.d[3] * float(dot4(w.v[3], a.q[3], 0));
    }
};

// Repacked Q6_K (hip_packed.h: 16-byte aligned 208-byte bodies {ql[128], qh[64], int8
// scales[16]}, the d's apart): item k (0..3) = half h = k / 2,
// positions 16j..16j+15 (j = k % 2) of its four quarters, as three 16-byte loads (the ql bytes of
// quarters 0 / 2, of quarters 1 / 3, and the qh bytes) where the file layout takes 4-byte words
// in 2-byte loads, 64 weights an item instead of 16; quarter q's scale sc[8h + j + 2q] from one
// 8-byte load; activations: half j of blocks 8b + 4h + q.
template <>
struct Q8Dot<kQ6_KR> {
    static constexpr int kWeights = 256, kItems = 4, kAlign = 16;
    struct W {
        int v[4][4];  // [quarter][word]
        float s[4];
    };
    struct A {
        int4 q[4];
        float d[4];
    };
    __device__ static W weights(const uint8_t* row, int b, int k) {
        const uint8_t* body = q6kr_body(row, b);
        const int h = k / 2, j = k % 2;
        const uint4 la = *reinterpret_cast<const uint4*>(body + 64 * h + 16 * j);
        const uint4 lb = *reinterpret_cast<const uint4*>(body + 64 * h + 32 + 16 * j);
        const uint4 qh = *reinterpret_cast<const uint4*>(body + 128 + 32 * h + 16 * j);
        const uint2 sc = *reinterpret_cast<const uint2*>(body + 192 + 8 * h);
        const float d = f16_at(q6kr_d(row, b));
        const uint32_t a[4] = {la.x, la.y, la.z, la.w}, c[4] = {lb.x, lb.y, lb.z, lb.w},
                       e[4] = {qh.x, qh.y, qh.z, qh.w};
        W w;
        TANDEM_Q8_UNROLL
        for (int i = 0; i < 4; ++i) {
            w.v[0][i] = minus32((a[i] & 0x0F0F0F0Fu) | ((e[i] & 0x03030303u) << 4));
            w.v[1][i] = minus32((c[i] & 0x0F0F0F0Fu) | (((e[i] >> 2) & 0x03030303u) << 4));
            w.v[2][i] = minus32(((a[i] >> 4) & 0x0F0F0F0Fu) | (((e[i] >> 4) & 0x03030303u) << 4));
            w.v[3][i] = minus32(((c[i] >> 4) & 0x0F0F0F0Fu) | (((e[i] >> 6) & 0x03030303u) << 4));
        }
        // Bytes j, j + 2 of each scale word: quarters 0, 1 from sc[0..3], 2, 3 from sc[4..7].
        const uint32_t lo = sc.x >> (8 * j), hi = sc.y >> (8 * j);
        w.s[0] = d * float(int8_t(uint8_t(lo & 0xFFu)));
        w.s[1] = d * float(int8_t(uint8_t((lo >> 16) & 0xFFu)));
        w.s[2] = d * float(int8_t(uint8_t(hi & 0xFFu)));
        w.s[3] = d * float(int8_t(uint8_t((hi >> 16) & 0xFFu)));
        return w;
    }
    __device__ static A acts(const Act& x, int b, int k) {
        const int a0 = b * 8 + 4 * (k / 2), j = k % 2;  // activation block of quarter 0
        const float4 d01 = *reinterpret_cast<const float4*>(x.ds + a0);
        const float4 d23 = *reinterpret_cast<const float4*>(x.ds + a0 + 2);
        A r;
        TANDEM_Q8_UNROLL
        for (int q = 0; q < 4; ++q) r.q[q] = act_half(x, a0 + q, j);
        r.d[0] = d01.x, r.d[1] = d01.z, r.d[2] = d23.x, r.d[3] = d23.z;
        return r;
    }
    __device__ static float dot(const W& w, const A& a) {
        float r = 0.0f;
        TANDEM_Q8_UNROLL
        for (int q = 0; q < 4; ++q) {
            const int s = dot4(
                w.v[q][0], a.q[q].x,
                dot4(w.v[q][1], a.q[q].y, dot4(w.v[q][2], a.q[q].z, dot4(w.v[q][3], a.q[q].w, 0))));
            r += w.s[q] * a.d[q] * float(s);
        }
        return r;
    }
};

// Item k of block b of a row dotted with TM tokens' activations, added to acc[t] (the host
// test's entry; the kernel shares each item's activations across its rows).
template <DType T, int TM, class D = Q8Dot<T>>
__device__ inline void q8_item(const uint8_t* row, int b, int k, const Act* x, float (&acc)[TM]) {
    const typename D::W w = D::weights(row, b, k);
    TANDEM_Q8_UNROLL
    for (int t = 0; t < TM; ++t) acc[t] += D::dot(w, D::acts(x[t], b, k));
}

}  // namespace tandem::hip
