#pragma once
// Whole-block weight decode for the fast matmul kernels. A row of a weight is a sequence of
// "units" (one quant block, a 64-weight chunk of a K-quant super-block, or 32 plain halves);
// load() reads one unit's bytes into registers with the widest loads its alignment allows
// (16-byte loads for F16/BF16/Q4_K/Q5_K, whose blocks are 16-byte multiples; 2-byte loads for
// Q4_0/Q8_0/Q6_K, whose 18/34/210-byte blocks are only 2-byte aligned), and piece(p) decodes
// the 8 consecutive weights 8p..8p+7 of the unit from those registers.
// Layouts are ggml's; the per-element reference is load_weight() in hip_decode.h.
#include <cstdint>

#include "hip_decode.h"

namespace tandem::hip {

// f16 bits -> f32 without branches for normal and subnormal values (exact: the 2^112 product
// rebiases the exponent; subnormal halves land on exact f32 values); inf/nan kept.
__device__ inline float f16_fast(uint32_t h) {
    const uint32_t m = (h & 0x7fffu) << 13;
    float f = __uint_as_float(m) * __uint_as_float(0x77800000u);  // 2^112
    if ((h & 0x7c00u) == 0x7c00u) f = __uint_as_float(0x7f800000u | m);
    return (h & 0x8000u) ? -f : f;
}

// 32-bit word i of a 2-byte aligned byte range.
__device__ inline uint32_t word16(const uint16_t* p, int i) {
    return uint32_t(p[2 * i]) | (uint32_t(p[2 * i + 1]) << 16);
}

template <DType T>
struct Blocks {
    static constexpr bool kFast = false;
};

template <>
struct Blocks<DType::F16> {
    static constexpr bool kFast = true, kWide = true;
    static constexpr int kWeights = 32, kBytes = 64;
    struct Raw {
        uint4 v[4];
    };
    __device__ static void load(const uint8_t* row, int64_t u, Raw& r) {
        const auto* p = reinterpret_cast<const uint4*>(row + u * kBytes);
#pragma unroll
        for (int i = 0; i < 4; ++i) r.v[i] = p[i];
    }
    __device__ static void piece(const Raw& r, int p, float* w) {
        const uint32_t q[4] = {r.v[p].x, r.v[p].y, r.v[p].z, r.v[p].w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            w[2 * i] = f16_fast(q[i] & 0xffffu);
            w[2 * i + 1] = f16_fast(q[i] >> 16);
        }
    }
};

template <>
struct Blocks<DType::BF16> {
    static constexpr bool kFast = true, kWide = true;
    static constexpr int kWeights = 32, kBytes = 64;
    using Raw = Blocks<DType::F16>::Raw;
    __device__ static void load(const uint8_t* row, int64_t u, Raw& r) {
        Blocks<DType::F16>::load(row, u, r);
    }
    __device__ static void piece(const Raw& r, int p, float* w) {
        const uint32_t q[4] = {r.v[p].x, r.v[p].y, r.v[p].z, r.v[p].w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            w[2 * i] = __uint_as_float(q[i] << 16);
            w[2 * i + 1] = __uint_as_float(q[i] & 0xffff0000u);
        }
    }
};

// {d, qs[16]}: weight j < 16 is the low nibble of qs[j], j >= 16 the high nibble of qs[j-16].
template <>
struct Blocks<DType::Q4_0> {
    static constexpr bool kFast = true, kWide = false;
    static constexpr int kWeights = 32, kBytes = 18;
    struct Raw {
        uint32_t q[4];
        float d;
    };
    __device__ static void load(const uint8_t* row, int64_t u, Raw& r) {
        const auto* h = reinterpret_cast<const uint16_t*>(row + u * kBytes);
        r.d = f16_fast(h[0]);
#pragma unroll
        for (int i = 0; i < 4; ++i) r.q[i] = word16(h + 1, i);
    }
    __device__ static void piece(const Raw& r, int p, float* w) {
        const int shift = p >= 2 ? 4 : 0;
        const uint32_t a = r.q[2 * (p & 1)] >> shift, b = r.q[2 * (p & 1) + 1] >> shift;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            w[i] = r.d * float(int((a >> (8 * i)) & 0xFu) - 8);
            w[4 + i] = r.d * float(int((b >> (8 * i)) & 0xFu) - 8);
        }
    }
};

// {d, int8 qs[32]}.
template <>
struct Blocks<DType::Q8_0> {
    static constexpr bool kFast = true, kWide = false;
    static constexpr int kWeights = 32, kBytes = 34;
    struct Raw {
        uint32_t q[8];
        float d;
    };
    __device__ static void load(const uint8_t* row, int64_t u, Raw& r) {
        const auto* h = reinterpret_cast<const uint16_t*>(row + u * kBytes);
        r.d = f16_fast(h[0]);
#pragma unroll
        for (int i = 0; i < 8; ++i) r.q[i] = word16(h + 1, i);
    }
    __device__ static void piece(const Raw& r, int p, float* w) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            w[i] = r.d * float(int8_t(uint8_t(r.q[2 * p] >> (8 * i))));
            w[4 + i] = r.d * float(int8_t(uint8_t(r.q[2 * p + 1] >> (8 * i))));
        }
    }
};

// Repacked Q4_0 / Q8_0 (hip_packed.h): a block's scale is half-word b % 8 of its group of 8
// and its quants 16-byte aligned (one or two 16-byte loads instead of 2-byte ones); decoded as
// the file blocks.
template <DType F, int Quant>
struct BlocksPacked {
    static constexpr bool kFast = true, kWide = true;
    static constexpr int kWeights = 32;
    using Raw = typename Blocks<F>::Raw;
    __device__ static void load(const uint8_t* row, int64_t u, Raw& r) {
        const uint8_t* grp = row + (u / 8) * (16 + 8 * Quant);
        r.d = f16_fast(reinterpret_cast<const uint16_t*>(grp)[u % 8]);
        const auto* q = reinterpret_cast<const uint4*>(grp + 16 + (u % 8) * Quant);
#pragma unroll
        for (int i = 0; i < Quant / 16; ++i) {
            const uint4 v = q[i];
            r.q[4 * i] = v.x, r.q[4 * i + 1] = v.y, r.q[4 * i + 2] = v.z, r.q[4 * i + 3] = v.w;
        }
    }
    __device__ static void piece(const Raw& r, int p, float* w) {
        Blocks<F>::piece(r, p, w);
    }
};
template <>
struct Blocks<kQ4_0R> : BlocksPacked<DType::Q4_0, 16> {};
template <>
struct Blocks<kQ8_0R> : BlocksPacked<DType::Q8_0, 32> {};

// Q4_K/Q5_K super-block of 256: {d, dmin, scales[12], (Q5_K: qh[32]), qs[128]}. Unit = chunk c
// of 64 weights: qs[32c..32c+32), low nibbles are sub-block 2c, high nibbles sub-block 2c+1;
// Q5_K adds bit (2c or 2c+1) of qh[l] as the fifth bit.
template <bool Five>
struct BlocksK45 {
    static constexpr bool kFast = true, kWide = true;
    static constexpr int kWeights = 64, kSuper = Five ? 176 : 144;
    struct Raw {
        uint32_t q[8];
        uint32_t h[Five ? 8 : 1];
        float d0, m0, d1, m1;
        int hbit;
    };
    __device__ static void load(const uint8_t* row, int64_t u, Raw& r) {
        const int64_t kb = u / 4;
        const int c = int(u % 4);
        const uint8_t* blk = row + kb * kSuper;
        const uint4 hdr = *reinterpret_cast<const uint4*>(blk);
        const float d = f16_fast(hdr.x & 0xffffu), dmin = f16_fast(hdr.x >> 16);
        // ggml's get_scale_min_k4 for sub-blocks 2c and 2c + 1.
        auto scale_min = [&](int j, float& ds, float& dm) {
            int s, m;
            k4_scale_min(hdr, j, s, m);
            ds = d * float(s);
            dm = dmin * float(m);
        };
        scale_min(2 * c, r.d0, r.m0);
        scale_min(2 * c + 1, r.d1, r.m1);
        load_quants(blk, c, r.q, r.h);
        r.hbit = 2 * c;
    }
    // Chunk c's 32 quant bytes of super-block blk, and Q5_K's 32 qh bytes.
    __device__ static void load_quants(const uint8_t* blk, int c, uint32_t (&q)[8],
                                       uint32_t (&h)[Five ? 8 : 1]) {
        const auto* qs = reinterpret_cast<const uint4*>(blk + (Five ? 48 : 16) + 32 * c);
        const uint4 a = qs[0], b = qs[1];
        q[0] = a.x, q[1] = a.y, q[2] = a.z, q[3] = a.w;
        q[4] = b.x, q[5] = b.y, q[6] = b.z, q[7] = b.w;
        if constexpr (Five) {
            const auto* qh = reinterpret_cast<const uint4*>(blk + 16);
            const uint4 e = qh[0], f = qh[1];
            h[0] = e.x, h[1] = e.y, h[2] = e.z, h[3] = e.w;
            h[4] = f.x, h[5] = f.y, h[6] = f.z, h[7] = f.w;
        }
    }
    __device__ static void piece(const Raw& r, int p, float* w) {
        const bool hi = p >= 4;
        const int b = 2 * (p & 3);  // first of the two qs words (bytes 8(p%4)..)
        const int shift = hi ? 4 : 0;
        const float d = hi ? r.d1 : r.d0, m = hi ? r.m1 : r.m0;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const uint32_t q = r.q[b + half] >> shift;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                int v = int((q >> (8 * i)) & 0xFu);
                if constexpr (Five)
                    v += int((r.h[b + half] >> (8 * i + r.hbit + (hi ? 1 : 0))) & 1u) << 4;
                w[4 * half + i] = d * float(v) - m;
            }
        }
    }
};
template <>
struct Blocks<DType::Q4_K> : BlocksK45<false> {};
template <>
struct Blocks<DType::Q5_K> : BlocksK45<true> {};

// Q6_K super-block of 256 (210 bytes): {ql[128], qh[64], int8 scales[16], d}. Unit = quarter q
// of half h (32 weights): low 4 bits from ql[64h + 32(q&1) + l] (high nibble when q >= 2), top
// 2 bits from bits 2q of qh[32h + l]; scale sc[8h + 2q + l/16].
template <>
struct Blocks<DType::Q6_K> {
    static constexpr bool kFast = true, kWide = false;
    static constexpr int kWeights = 32;
    struct Raw {
        uint32_t ql[8], qh[8];
        float s0, s1;
        int shl, shh;
    };
    __device__ static void load(const uint8_t* row, int64_t u, Raw& r) {
        const int64_t kb = u / 8;
        const int h = int(u / 4 % 2), q = int(u % 4);
        const uint8_t* blk = row + kb * 210;
        const auto* ql = reinterpret_cast<const uint16_t*>(blk + 64 * h + 32 * (q & 1));
        const auto* qh = reinterpret_cast<const uint16_t*>(blk + 128 + 32 * h);
#pragma unroll
        for (int i = 0; i < 8; ++i) r.ql[i] = word16(ql, i), r.qh[i] = word16(qh, i);
        const uint16_t sc = *reinterpret_cast<const uint16_t*>(blk + 192 + 8 * h + 2 * q);
        const float d = f16_fast(*reinterpret_cast<const uint16_t*>(blk + 208));
        r.s0 = d * float(int8_t(uint8_t(sc & 0xffu)));
        r.s1 = d * float(int8_t(uint8_t(sc >> 8)));
        r.shl = q >= 2 ? 4 : 0;
        r.shh = 2 * q;
    }
    __device__ static void piece(const Raw& r, int p, float* w) {
        const float s = p < 2 ? r.s0 : r.s1;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const uint32_t lo = r.ql[2 * p + half] >> r.shl, hi = r.qh[2 * p + half] >> r.shh;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int v = int((lo >> (8 * i)) & 0xFu) | (int((hi >> (8 * i)) & 3u) << 4);
                w[4 * half + i] = s * float(v - 32);
            }
        }
    }
};

// Repacked Q6_K (hip_packed.h): the same units from 16-byte aligned bodies (16-byte loads of ql
// and qh), d from the group's tail.
template <>
struct Blocks<kQ6_KR> {
    static constexpr bool kFast = true, kWide = true;
    static constexpr int kWeights = 32;
    using Raw = Blocks<DType::Q6_K>::Raw;
    __device__ static void load(const uint8_t* row, int64_t u, Raw& r) {
        const int64_t kb = u / 8;
        const int h = int(u / 4 % 2), q = int(u % 4);
        const uint8_t* blk = q6kr_body(row, kb);
        const auto* ql = reinterpret_cast<const uint4*>(blk + 64 * h + 32 * (q & 1));
        const auto* qh = reinterpret_cast<const uint4*>(blk + 128 + 32 * h);
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const uint4 a = ql[i], b = qh[i];
            r.ql[4 * i] = a.x, r.ql[4 * i + 1] = a.y, r.ql[4 * i + 2] = a.z, r.ql[4 * i + 3] = a.w;
            r.qh[4 * i] = b.x, r.qh[4 * i + 1] = b.y, r.qh[4 * i + 2] = b.z, r.qh[4 * i + 3] = b.w;
        }
        const uint16_t sc = *reinterpret_cast<const uint16_t*>(blk + 192 + 8 * h + 2 * q);
        const float d = f16_fast(*reinterpret_cast<const uint16_t*>(q6kr_d(row, kb)));
        r.s0 = d * float(int8_t(uint8_t(sc & 0xffu)));
        r.s1 = d * float(int8_t(uint8_t(sc >> 8)));
        r.shl = q >= 2 ? 4 : 0;
        r.shh = 2 * q;
    }
    __device__ static void piece(const Raw& r, int p, float* w) {
        Blocks<DType::Q6_K>::piece(r, p, w);
    }
};

// Weights k..k+7 of a row (k a multiple of 8): whole-unit decode where Blocks<T> has one, else
// element by element.
template <DType T>
__device__ inline void decode8(const uint8_t* row, int64_t k, float* w) {
    if constexpr (Blocks<T>::kFast) {
        using B = Blocks<T>;
        typename B::Raw r;
        B::load(row, k / B::kWeights, r);
        B::piece(r, int(k % B::kWeights) / 8, w);
    } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) w[i] = load_weight<T>(row, k + i);
    }
}

inline bool aligned(const void* p, uintptr_t a) {
    return reinterpret_cast<uintptr_t>(p) % a == 0;
}

// Rows start where the kernels' loads need them: 16 bytes for the wide units, 2 for the
// 2-byte-aligned blocks, 4 for the element-wise decode (f32).
template <DType T>
bool rows_aligned(const void* w, int64_t stride) {
    uintptr_t a = 4;
    if constexpr (Blocks<T>::kFast) a = Blocks<T>::kWide ? 16 : 2;
    return aligned(w, a) && stride % int64_t(a) == 0;
}

// Weights k..k+31 of a row (k a multiple of 32), in two halves: load() reads their bytes into
// registers (one unit load where a unit holds all 32; the element-wise types keep the address),
// decode8() turns 8 of them into floats (the pieces by constant index, so the unit's registers
// stay registers; 8 at a time, so a caller packing them to f16 keeps 8 floats live, not 32). Apart
// so a kernel issues all of a step's global loads (k_mat_mul_mma: these and its activations) before
// it decodes any of them.
template <DType T, bool Fast = Blocks<T>::kFast>
struct Group32 {
    const uint8_t* row = nullptr;
    int64_t k = 0;
    __device__ void load(const uint8_t* r, int64_t kk) { row = r, k = kk; }
    // Weights 8c .. 8c + 7 of the group.
    __device__ void decode8(int c, float* w) const {
#pragma unroll
        for (int i = 0; i < 8; ++i) w[i] = load_weight<T>(row, k + 8 * c + i);
    }
};

template <DType T>
struct Group32<T, true> {
    using B = Blocks<T>;
    static_assert(B::kWeights == 32 || B::kWeights == 64, "units of 32 or 64 weights");
    typename B::Raw raw;
    bool second = false;  // the unit's second 32 (units of 64)
    __device__ void load(const uint8_t* r, int64_t k) {
        B::load(r, k / B::kWeights, raw);
        second = B::kWeights == 64 && k % 64 != 0;
    }
    // Weights 8c .. 8c + 7 of the group.
    __device__ void decode8(int c, float* w) const {
        if (!second)
            B::piece(raw, c, w);
        else
            B::piece(raw, (4 + c) % (B::kWeights / 8), w);
    }
};

// Q4_K / Q5_K: a group is one sub-block j of a super-block, so it keeps only j's scale and min
// and the nibble and fifth bit j selects, where the unit of 64 keeps both sub-blocks' (the prefill
// tile's 128-token form spilled Q5_K's surplus beside its 64 sums: 8 bytes, session 25). The same
// arithmetic as BlocksK45::piece, so the same bits.
template <bool Five>
struct Group32K45 {
    uint32_t q[8];
    uint32_t h[Five ? 8 : 1];
    float d, m;
    int j;  // the sub-block: nibble j % 2 of the unit's bytes, Q5_K's fifth bit j
    __device__ void load(const uint8_t* row, int64_t k) {
        const uint8_t* blk = row + (k / 256) * BlocksK45<Five>::kSuper;
        j = int(k % 256) / 32;
        const uint4 hdr = *reinterpret_cast<const uint4*>(blk);
        int s, mm;
        k4_scale_min(hdr, j, s, mm);
        d = f16_fast(hdr.x & 0xffffu) * float(s);
        m = f16_fast(hdr.x >> 16) * float(mm);
        BlocksK45<Five>::load_quants(blk, j / 2, q, h);
    }
    // Weights 8c .. 8c + 7 of the group.
    __device__ void decode8(int c, float* w) const {
        const int shift = 4 * (j % 2);
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const uint32_t qq = q[2 * c + half] >> shift;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                int v = int((qq >> (8 * i)) & 0xFu);
                if constexpr (Five) v += int((h[2 * c + half] >> (8 * i + j)) & 1u) << 4;
                w[4 * half + i] = d * float(v) - m;
            }
        }
    }
};
template <>
struct Group32<DType::Q4_K, true> : Group32K45<false> {};
template <>
struct Group32<DType::Q5_K, true> : Group32K45<true> {};

}  // namespace tandem::hip
