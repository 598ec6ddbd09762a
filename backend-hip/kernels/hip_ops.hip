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

template <DType T>
__device__ float load_weight(const void* row, int64_t i) {
    if constexpr (T == DType::F32) return static_cast<const float*>(row)[i];
    if constexpr (T == DType::F16) return f16_bits_to_f32(static_cast<const uint16_t*>(row)[i]);
    if constexpr (T == DType::BF16) return bf16_bits_to_f32(static_cast<const uint16_t*>(row)[i]);
    return 0.0f;
}

template <DType T>
__host__ __device__ constexpr int64_t elem_bytes() {
    return T == DType::F32 ? 4 : 2;
}

// grid (n_tok); block kBlock: each thread converts elements of one looked-up row.
template <DType T>
__global__ void k_get_rows(const void* table, int64_t n_in, int64_t n_rows, const int32_t* ids,
                           float* out) {
    const int32_t id = ids[blockIdx.x];
    float* o = out + int64_t(blockIdx.x) * n_in;
    const bool ok = id >= 0 && id < n_rows;
    const auto* row =
        static_cast<const uint8_t*>(table) + (ok ? int64_t(id) : 0) * n_in * elem_bytes<T>();
    for (int64_t i = threadIdx.x; i < n_in; i += blockDim.x)
        o[i] = ok ? load_weight<T>(row, i) : 0.0f;
}

// grid (n_out, n_tok); block kRowBlock: one block per output element, a strided dot product
// reduced in shared memory. The simple form: quantised types and a bandwidth-tuned decode
// kernel come next (docs/hip.md).
template <DType T>
__global__ void k_mat_mul(const void* w, int64_t n_in, const float* x, const float* bias,
                          int64_t n_out, float* out) {
    __shared__ float sh[kRowBlock];
    const int64_t o = blockIdx.x, t = blockIdx.y;
    const auto* row = static_cast<const uint8_t*>(w) + o * n_in * elem_bytes<T>();
    const float* xr = x + t * n_in;
    float acc = 0.0f;
    for (int64_t i = threadIdx.x; i < n_in; i += kRowBlock) acc += load_weight<T>(row, i) * xr[i];
    acc = block_sum<kRowBlock>(acc, sh);
    if (threadIdx.x == 0) out[t * n_out + o] = acc + (bias ? bias[o] : 0.0f);
}

}  // namespace

bool weight_type_supported(DType type) {
    return type == DType::F32 || type == DType::F16 || type == DType::BF16;
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
    switch (type) {
        case DType::F32:
            hipLaunchKernelGGL(k_get_rows<DType::F32>, grid, block, 0, s, table, n_in, n_rows, ids,
                               out);
            break;
        case DType::F16:
            hipLaunchKernelGGL(k_get_rows<DType::F16>, grid, block, 0, s, table, n_in, n_rows, ids,
                               out);
            break;
        case DType::BF16:
            hipLaunchKernelGGL(k_get_rows<DType::BF16>, grid, block, 0, s, table, n_in, n_rows, ids,
                               out);
            break;
        default:
            break;  // the backend checks weight_type_supported() first
    }
}

void launch_mat_mul(DType type, const void* w, int64_t n_in, int64_t n_out, const float* x,
                    int64_t n_tok, const float* bias, float* out, hipStream_t s) {
    if (n_out <= 0 || n_tok <= 0) return;
    const dim3 grid(static_cast<unsigned>(n_out), static_cast<unsigned>(n_tok)), block(kRowBlock);
    switch (type) {
        case DType::F32:
            hipLaunchKernelGGL(k_mat_mul<DType::F32>, grid, block, 0, s, w, n_in, x, bias, n_out,
                               out);
            break;
        case DType::F16:
            hipLaunchKernelGGL(k_mat_mul<DType::F16>, grid, block, 0, s, w, n_in, x, bias, n_out,
                               out);
            break;
        case DType::BF16:
            hipLaunchKernelGGL(k_mat_mul<DType::BF16>, grid, block, 0, s, w, n_in, x, bias, n_out,
                               out);
            break;
        default:
            break;
    }
}

}  // namespace tandem::hip
