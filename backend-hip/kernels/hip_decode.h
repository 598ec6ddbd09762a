#pragma once
// Device helpers shared by the HIP kernels: per-element weight decode (the generic, simple path),
// block and 32-lane reductions, and the X-macro of the weight types the kernels read.
// Included by .hip files only.
#include <cstdint>

#include "hip_packed.h"
#include "hip_q8_layout.h"
#include "hip_weight_types.h"
#include "tandem/common/dtype.h"

// The weight types the kernels read, as an X-macro over DType names.
#define TANDEM_HIP_WEIGHT_TYPES(X) \
    X(F32) X(F16) X(BF16) X(Q4_0) X(Q4_1) X(Q5_0) X(Q5_1) X(Q8_0) X(Q4_K) X(Q5_K) X(Q6_K)

namespace tandem::hip {

// f(std::integral_constant<DType, T>{}) for the layout `kind` the kernels read: a repacked id
// (hip_packed.h) or a weight type of TANDEM_HIP_WEIGHT_TYPES; false (f not called) for any other.
template <class F>
bool visit_weight_layout(DType kind, F&& f) {
    if (visit_packed(kind, f)) return true;
    switch (kind) {
#define TANDEM_CASE(T)                                \
    case DType::T:                                    \
        f(std::integral_constant<DType, DType::T>{}); \
        return true;
        TANDEM_HIP_WEIGHT_TYPES(TANDEM_CASE)
#undef TANDEM_CASE
        default:
            return false;
    }
}

// Sum of v over the block (blockDim.x == Block, a power of two); every thread gets the result.
// Shared memory, not shuffles, so it holds for wave32 and wave64 alike.
template <int Block>
__device__ inline float block_sum(float v, float* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int stride = Block / 2; stride > 0; stride >>= 1) {
        if (static_cast<int>(threadIdx.x) < stride) sh[threadIdx.x] += sh[threadIdx.x + stride];
        __syncthreads();
    }
    const float r = sh[0];
    __syncthreads();
    return r;
}

// Lanes are grouped in 32s for the matvec kernels: a 32-lane group is a whole warp on NVIDIA and
// RDNA (wave32) and half a wave on CDNA (wave64); width-32 shuffles stay inside the group on
// both, so the same code is correct for either wave size (TANDEM_WARP_SIZE is 32 or 64).
constexpr int kLaneGroup = 32;

// Lane l gets v of lane l ^ off, inside aligned runs of `width` lanes (every lane of the warp
// calls it: the CUDA mask is the whole warp).
template <class V>
__device__ inline V lane_xor(V v, int off, int width) {
#if defined(TANDEM_HIP_ON_CUDA)
    return __shfl_xor_sync(0xffffffffu, v, off, width);
#else
    return __shfl_xor(v, off, width);
#endif
}

// The sum of squares of a float4, as the RMSNorm kernels form it (k_rms_norm4, k_qk_norm_rope).
__device__ inline float sq4(float4 a) {
    return a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w;
}

template <class V>
__device__ inline V group_sum(V v) {
    for (int off = kLaneGroup / 2; off > 0; off >>= 1) v += lane_xor(v, off, kLaneGroup);
    return v;
}

__device__ inline float group_max(float v) {
    for (int off = kLaneGroup / 2; off > 0; off >>= 1) v = fmaxf(v, lane_xor(v, off, kLaneGroup));
    return v;
}

// Quantises value v of 32-value block blk (one per lane of a whole 32-lane group, lane i holding
// value i) into the q8 activations qs / ds (launch_quantize_q8's layout, hip_q8_layout.h);
// live: store it.
__device__ inline void q8_store_group(float v, int64_t i, bool live, int8_t* qs, float2* ds) {
    const float amax = group_max(fabsf(v));
    const float d = amax / 127.0f;
    const int q = amax > 0.0f ? int(rintf(v / d)) : 0;
    const float sum = group_sum(float(q));  // exact: |sum| <= 32 * 127
    if (!live) return;
    qs[q8_byte_offset(i)] = int8_t(q);
    if (i % kLaneGroup == 0) ds[i / kLaneGroup] = make_float2(d, d * sum);
}

// The q8 activations of one float4 (float4 index i of the buffer; 8 consecutive lanes hold a
// block of 32), exactly as q8_store_group and k_quantize_q8 make them: d = max|x| / 127, q =
// round(x / d), s = d * sum q; the four values' bytes are one word of the layout
// (hip_q8_layout.h: halves of 16 values). Every lane of the warp calls it; lanes with live ==
// false add zeros and store nothing.
__device__ inline void q8_store4(float4 a, int64_t i, bool live, int8_t* qs, float2* ds) {
    float m = fmaxf(fmaxf(fabsf(a.x), fabsf(a.y)), fmaxf(fabsf(a.z), fabsf(a.w)));
    for (int off = 4; off > 0; off >>= 1) m = fmaxf(m, lane_xor(m, off, 8));
    const float d = m / 127.0f;
    const int q0 = m > 0.0f ? int(rintf(a.x / d)) : 0, q1 = m > 0.0f ? int(rintf(a.y / d)) : 0,
              q2 = m > 0.0f ? int(rintf(a.z / d)) : 0, q3 = m > 0.0f ? int(rintf(a.w / d)) : 0;
    int sum = q0 + q1 + q2 + q3;
    for (int off = 4; off > 0; off >>= 1) sum += lane_xor(sum, off, 8);
    if (!live) return;
    *reinterpret_cast<uint32_t*>(qs + q8_byte_offset(4 * i)) =
        (uint32_t(q0) & 0xffu) | ((uint32_t(q1) & 0xffu) << 8) | ((uint32_t(q2) & 0xffu) << 16) |
        (uint32_t(q3) << 24);
    if (i % 8 == 0) ds[i / 8] = make_float2(d, d * float(sum));
}

__device__ inline float half_at(const uint8_t* p) {
    return f16_bits_to_f32(uint16_t(p[0] | (p[1] << 8)));
}

// The 6-bit (scale, min) pair of sub-block `sub` (0..7) of a Q4_K/Q5_K super-block; sc points
// at the 12 packed bytes.
__device__ inline void k_scale_min(const uint8_t* sc, int sub, int& scale, int& mn) {
    if (sub < 4) {
        scale = sc[sub] & 63;
        mn = sc[sub + 4] & 63;
    } else {
        scale = (sc[sub + 4] & 0xF) | ((sc[sub - 4] >> 6) << 4);
        mn = (sc[sub + 4] >> 4) | ((sc[sub] >> 6) << 4);
    }
}

// Element i of a weight row in type T. Block types follow ggml's layouts (32 weights per block,
// f16 scale first; K-quants 256 per super-block). One element at a time: the generic path for
// odd shapes and the rarer types; the matvec/tiled kernels decode whole blocks.
template <DType T>
__device__ inline float load_weight(const uint8_t* row, int64_t i) {
    if constexpr (T == DType::F32) return reinterpret_cast<const float*>(row)[i];
    if constexpr (T == DType::F16)
        return f16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
    if constexpr (T == DType::BF16)
        return bf16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
    const int64_t b = i / 32, j = i % 32;
    if constexpr (T == kQ4_0R || T == kQ8_0R) {  // (a constexpr call is host-only to nvcc)
        // Groups of 8 blocks: [8 f16 scales][8 x 16 (Q4_0) or 32 (Q8_0) quant bytes].
        constexpr int64_t quant = T == kQ4_0R ? 16 : 32;
        const uint8_t* grp = row + (b / 8) * (16 + 8 * quant);
        const float d = half_at(grp + 2 * (b % 8));
        const uint8_t* qs = grp + 16 + (b % 8) * quant;
        if constexpr (T == kQ8_0R) return d * float(static_cast<int8_t>(qs[j]));
        const int q = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
        return d * float(q - 8);
    }
    if constexpr (T == DType::Q8_0) {  // {d, int8 q[32]}
        const uint8_t* blk = row + b * 34;
        return half_at(blk) * float(static_cast<int8_t>(blk[2 + j]));
    }
    if constexpr (T == DType::Q4_0 ||
                  T == DType::Q4_1) {  // {d, (m), nibbles: low = j, high = j+16}
        const int hdr = T == DType::Q4_0 ? 2 : 4;
        const uint8_t* blk = row + b * (hdr + 16);
        const int q = j < 16 ? (blk[hdr + j] & 0xF) : (blk[hdr + j - 16] >> 4);
        if constexpr (T == DType::Q4_0) return half_at(blk) * float(q - 8);
        return half_at(blk) * float(q) + half_at(blk + 2);
    }
    if constexpr (T == DType::Q5_0 || T == DType::Q5_1) {  // {d, (m), qh: bit j = 5th bit, nibbles}
        const int hdr = T == DType::Q5_0 ? 2 : 4;
        const uint8_t* blk = row + b * (hdr + 20);
        const uint32_t qh = uint32_t(blk[hdr]) | (uint32_t(blk[hdr + 1]) << 8) |
                            (uint32_t(blk[hdr + 2]) << 16) | (uint32_t(blk[hdr + 3]) << 24);
        const int lo = j < 16 ? (blk[hdr + 4 + j] & 0xF) : (blk[hdr + 4 + j - 16] >> 4);
        const int q = lo | int(((qh >> j) & 1u) << 4);
        if constexpr (T == DType::Q5_0) return half_at(blk) * float(q - 16);
        return half_at(blk) * float(q) + half_at(blk + 2);
    }
    if constexpr (T == DType::Q4_K || T == DType::Q5_K) {
        // 256 weights: {d, dmin, 12 bytes of 6-bit (scale, min) pairs, (qh[32]), qs[128]};
        // chunk c of 64 weights uses qs[32c..], low nibbles first, then high.
        const int64_t kb = i / 256, k = i % 256, sub = k / 32, l = k % 32, c = k / 64;
        const uint8_t* blk = row + kb * (T == DType::Q4_K ? 144 : 176);
        int scale, mn;
        k_scale_min(blk + 4, int(sub), scale, mn);
        const uint8_t* qs = blk + (T == DType::Q4_K ? 16 : 48);
        int q = (sub % 2) ? (qs[32 * c + l] >> 4) : (qs[32 * c + l] & 0xF);
        if constexpr (T == DType::Q5_K) q += ((blk[16 + l] >> sub) & 1) << 4;
        return half_at(blk) * float(scale) * float(q) - half_at(blk + 2) * float(mn);
    }
    if constexpr (T == DType::Q6_K || T == kQ6_KR) {
        // 256 weights: {ql[128], qh[64], int8 scales[16], d}; two halves of 128, each four
        // quarters of 32 sharing ql/qh bytes. Repacked: the bodies and d's apart (hip_packed.h).
        const int64_t kb = i / 256, k = i % 256, half = k / 128, r = k % 128, quarter = r / 32,
                      l = r % 32;
        const uint8_t* blk = T == kQ6_KR ? q6kr_body(row, kb) : row + kb * 210;
        const uint8_t* d = T == kQ6_KR ? q6kr_d(row, kb) : blk + 208;
        const uint8_t* ql = blk + half * 64;
        const uint8_t* qh = blk + 128 + half * 32;
        const auto* sc = reinterpret_cast<const int8_t*>(blk + 192 + half * 8);
        const int lo = quarter & 1 ? ql[l + 32] : ql[l];
        const int nib = quarter >= 2 ? (lo >> 4) : (lo & 0xF);
        const int q = (nib | (((qh[l] >> (2 * quarter)) & 3) << 4)) - 32;
        return half_at(d) * float(sc[l / 16 + 2 * quarter]) * float(q);
    }
    return 0.0f;
}

}  // namespace tandem::hip
