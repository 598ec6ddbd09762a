// Element-wise, row-wise and matrix kernels of the HIP backend. Reductions go through shared
// memory with a power-of-two block, so they hold for wave32 (RDNA, NVIDIA) and wave64 (CDNA)
// alike.
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdint>

#include "hip_ops.h"
#include "hip_weight_types.h"

namespace tandem::hip {
namespace {

constexpr int kBlock = 256;     // element-wise block
constexpr int kRowBlock = 128;  // one block per reduced row

unsigned grid_for(int64_t n) {
    return static_cast<unsigned>((n + kBlock - 1) / kBlock);
}

// Sum of v over the block (blockDim.x == Block, a power of two); every thread gets the result.
template <int Block>
__device__ float block_sum(float v, float* sh) {
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

__global__ void k_binary(int mul, const float* a, const float* b, int64_t n, float* out) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = mul ? a[i] * b[i] : a[i] + b[i];
}

__global__ void k_scale(const float* a, float k, int64_t n, float* out) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * k;
}

__global__ void k_softcap(const float* a, float cap, int64_t n, float* out) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = cap * tanhf(a[i] / cap);
}

__global__ void k_gated(int act, const float* gate, const float* up, int64_t n, float* out) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float x = gate[i];
    float a;
    if (act == 0) {
        a = x / (1.0f + expf(-x));
    } else {
        constexpr float kSqrt2OverPi = 0.79788456080286535588f;
        a = 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
    }
    out[i] = a * up[i];
}

// grid.x = groups; block kRowBlock.
__global__ void k_rms_norm(const float* x, const float* w, int64_t group, float eps, float* out) {
    __shared__ float sh[kRowBlock];
    const float* xr = x + int64_t(blockIdx.x) * group;
    float* o = out + int64_t(blockIdx.x) * group;
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < group; i += kRowBlock) ss += xr[i] * xr[i];
    ss = block_sum<kRowBlock>(ss, sh);
    const float s = rsqrtf(ss / float(group) + eps);
    for (int64_t i = threadIdx.x; i < group; i += kRowBlock) o[i] = xr[i] * s * (w ? w[i] : 1.0f);
}

// Element i of a weight row in type T. Block types follow ggml's layouts (32 weights per block,
// f16 scale first); this per-element decode is the simple form: the bandwidth-tuned decode
// kernel reads whole blocks (docs/hip.md).
template <DType T>
__device__ float load_weight(const uint8_t* row, int64_t i) {
    if constexpr (T == DType::F32) return reinterpret_cast<const float*>(row)[i];
    if constexpr (T == DType::F16)
        return f16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
    if constexpr (T == DType::BF16)
        return bf16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
    const int64_t b = i / 32, j = i % 32;
    auto half_at = [](const uint8_t* p) { return f16_bits_to_f32(uint16_t(p[0] | (p[1] << 8))); };
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
        const uint8_t* sc = blk + 4;
        int scale, mn;
        if (sub < 4) {
            scale = sc[sub] & 63;
            mn = sc[sub + 4] & 63;
        } else {
            scale = (sc[sub + 4] & 0xF) | ((sc[sub - 4] >> 6) << 4);
            mn = (sc[sub + 4] >> 4) | ((sc[sub] >> 6) << 4);
        }
        const uint8_t* qs = blk + (T == DType::Q4_K ? 16 : 48);
        int q = (sub % 2) ? (qs[32 * c + l] >> 4) : (qs[32 * c + l] & 0xF);
        if constexpr (T == DType::Q5_K) q += ((blk[16 + l] >> sub) & 1) << 4;
        return half_at(blk) * float(scale) * float(q) - half_at(blk + 2) * float(mn);
    }
    if constexpr (T == DType::Q6_K) {
        // 256 weights: {ql[128], qh[64], int8 scales[16], d}; two halves of 128, each four
        // quarters of 32 sharing ql/qh bytes.
        const int64_t kb = i / 256, k = i % 256, half = k / 128, r = k % 128, quarter = r / 32,
                      l = r % 32;
        const uint8_t* blk = row + kb * 210;
        const uint8_t* ql = blk + half * 64;
        const uint8_t* qh = blk + 128 + half * 32;
        const auto* sc = reinterpret_cast<const int8_t*>(blk + 192 + half * 8);
        const int lo = quarter & 1 ? ql[l + 32] : ql[l];
        const int nib = quarter >= 2 ? (lo >> 4) : (lo & 0xF);
        const int q = (nib | (((qh[l] >> (2 * quarter)) & 3) << 4)) - 32;
        return half_at(blk + 208) * float(sc[l / 16 + 2 * quarter]) * float(q);
    }
    return 0.0f;
}

// grid (n_tok); block kBlock: each thread converts elements of one looked-up row.
template <DType T>
__global__ void k_get_rows(const void* table, int64_t n_in, int64_t row_stride, int64_t n_rows,
                           const int32_t* ids, float* out) {
    const int32_t id = ids[blockIdx.x];
    float* o = out + int64_t(blockIdx.x) * n_in;
    const bool ok = id >= 0 && id < n_rows;
    const auto* row = static_cast<const uint8_t*>(table) + (ok ? int64_t(id) : 0) * row_stride;
    for (int64_t i = threadIdx.x; i < n_in; i += blockDim.x)
        o[i] = ok ? load_weight<T>(row, i) : 0.0f;
}

// grid (n_out, n_tok); block kRowBlock: one block per output element, a strided dot product
// reduced in shared memory. The simple form: the bandwidth-tuned decode kernel and the tiled
// prefill matmul come next (docs/hip.md).
template <DType T>
__global__ void k_mat_mul(const void* w, int64_t n_in, int64_t row_stride, const float* x,
                          const float* bias, int64_t n_out, float* out) {
    __shared__ float sh[kRowBlock];
    const int64_t o = blockIdx.x, t = blockIdx.y;
    const auto* row = static_cast<const uint8_t*>(w) + o * row_stride;
    const float* xr = x + t * n_in;
    float acc = 0.0f;
    for (int64_t i = threadIdx.x; i < n_in; i += kRowBlock) acc += load_weight<T>(row, i) * xr[i];
    acc = block_sum<kRowBlock>(acc, sh);
    if (threadIdx.x == 0) out[t * n_out + o] = acc + (bias ? bias[o] : 0.0f);
}

// The weight types the kernels read, as an X-macro over DType names.
#define TANDEM_HIP_WEIGHT_TYPES(X) \
    X(F32) X(F16) X(BF16) X(Q4_0) X(Q4_1) X(Q5_0) X(Q5_1) X(Q8_0) X(Q4_K) X(Q5_K) X(Q6_K)

}  // namespace

bool weight_type_supported(DType type) {
    switch (type) {
#define TANDEM_CASE(T) case DType::T:
        TANDEM_HIP_WEIGHT_TYPES(TANDEM_CASE)
#undef TANDEM_CASE
        return true;
        default:
            return false;
    }
}

void launch_binary(bool mul, const float* a, const float* b, int64_t n, float* out, hipStream_t s) {
    if (n > 0)
        hipLaunchKernelGGL(k_binary, dim3(grid_for(n)), dim3(kBlock), 0, s, mul ? 1 : 0, a, b, n,
                           out);
}

void launch_scale(const float* a, float k, int64_t n, float* out, hipStream_t s) {
    if (n > 0) hipLaunchKernelGGL(k_scale, dim3(grid_for(n)), dim3(kBlock), 0, s, a, k, n, out);
}

void launch_softcap(const float* a, float cap, int64_t n, float* out, hipStream_t s) {
    if (n > 0) hipLaunchKernelGGL(k_softcap, dim3(grid_for(n)), dim3(kBlock), 0, s, a, cap, n, out);
}

void launch_gated(int act, const float* gate, const float* up, int64_t n, float* out,
                  hipStream_t s) {
    if (n > 0)
        hipLaunchKernelGGL(k_gated, dim3(grid_for(n)), dim3(kBlock), 0, s, act, gate, up, n, out);
}

void launch_rms_norm(const float* x, const float* w, int64_t group, int64_t n_groups, float eps,
                     float* out, hipStream_t s) {
    if (n_groups > 0)
        hipLaunchKernelGGL(k_rms_norm, dim3(static_cast<unsigned>(n_groups)), dim3(kRowBlock), 0, s,
                           x, w, group, eps, out);
}

void launch_get_rows(DType type, const void* table, int64_t n_in, int64_t n_rows,
                     const int32_t* ids, int64_t n, float* out, hipStream_t s) {
    if (n <= 0) return;
    const dim3 grid(static_cast<unsigned>(n)), block(kBlock);
    const auto stride = static_cast<int64_t>(row_bytes(type, static_cast<uint64_t>(n_in)));
    switch (type) {
#define TANDEM_CASE(T)                                                                           \
    case DType::T:                                                                               \
        hipLaunchKernelGGL(k_get_rows<DType::T>, grid, block, 0, s, table, n_in, stride, n_rows, \
                           ids, out);                                                            \
        break;
        TANDEM_HIP_WEIGHT_TYPES(TANDEM_CASE)
#undef TANDEM_CASE
        default:
            break;  // the backend checks weight_type_supported() first
    }
}

void launch_mat_mul(DType type, const void* w, int64_t n_in, int64_t n_out, const float* x,
                    int64_t n_tok, const float* bias, float* out, hipStream_t s) {
    if (n_out <= 0 || n_tok <= 0) return;
    const dim3 grid(static_cast<unsigned>(n_out), static_cast<unsigned>(n_tok)), block(kRowBlock);
    const auto stride = static_cast<int64_t>(row_bytes(type, static_cast<uint64_t>(n_in)));
    switch (type) {
#define TANDEM_CASE(T)                                                                       \
    case DType::T:                                                                           \
        hipLaunchKernelGGL(k_mat_mul<DType::T>, grid, block, 0, s, w, n_in, stride, x, bias, \
                           n_out, out);                                                      \
        break;
        TANDEM_HIP_WEIGHT_TYPES(TANDEM_CASE)
#undef TANDEM_CASE
        default:
            break;
    }
}

}  // namespace tandem::hip
