// Element-wise, row-wise and matrix kernels of the HIP backend. Reductions go through shared
// memory with a power-of-two block, so they hold for wave32 (RDNA, NVIDIA) and wave64 (CDNA)
// alike.
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdint>

#include "hip_decode.h"
#include "hip_ops.h"

namespace tandem::hip {
namespace {

constexpr int kBlock = 256;     // element-wise block
constexpr int kRowBlock = 128;  // one block per reduced row

unsigned grid_for(int64_t n) {
    return static_cast<unsigned>((n + kBlock - 1) / kBlock);
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

// One thread busy for `cycles` clocks (the profiler's hold at the start of a step).
__global__ void k_spin(long long cycles) {
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

constexpr int kNormThreads = 256;
constexpr int kNormRegs = 4;  // float4s per thread held in registers: rows up to 4096 floats

__device__ inline float sq4(float4 a) {
    return a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w;
}

// The fast RMSNorm: grid.x = groups of `group` floats (a multiple of 4, 16-byte aligned rows),
// 256 threads. Every thread issues all its 16-byte loads before using them and keeps them in
// registers (a row is read once up to 4096 floats), 32-lane shuffles then one shared step
// reduce the sum of squares.
__global__ void __launch_bounds__(kNormThreads)
    k_rms_norm4(const float* x, const float* w, int64_t group, float eps, float* out) {
    __shared__ float part[kNormThreads / kLaneGroup];
    const int64_t n4 = group / 4;
    const auto* xr = reinterpret_cast<const float4*>(x + int64_t(blockIdx.x) * group);
    auto* o = reinterpret_cast<float4*>(out + int64_t(blockIdx.x) * group);
    const auto* w4 = reinterpret_cast<const float4*>(w);
    float4 v[kNormRegs];
#pragma unroll
    for (int k = 0; k < kNormRegs; ++k) {
        const int64_t i = threadIdx.x + int64_t(k) * kNormThreads;
        v[k] = i < n4 ? xr[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < kNormRegs; ++k) ss += sq4(v[k]);
    for (int64_t i = threadIdx.x + kNormRegs * kNormThreads; i < n4; i += kNormThreads)
        ss += sq4(xr[i]);
    ss = group_sum(ss);
    if (threadIdx.x % kLaneGroup == 0) part[threadIdx.x / kLaneGroup] = ss;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int i = 0; i < kNormThreads / kLaneGroup; ++i) total += part[i];
    const float s = rsqrtf(total / float(group) + eps);
    auto scaled = [&](float4 a, int64_t i) {
        const float4 m = w4 ? w4[i] : make_float4(1.0f, 1.0f, 1.0f, 1.0f);
        return make_float4(a.x * s * m.x, a.y * s * m.y, a.z * s * m.z, a.w * s * m.w);
    };
#pragma unroll
    for (int k = 0; k < kNormRegs; ++k) {
        const int64_t i = threadIdx.x + int64_t(k) * kNormThreads;
        if (i < n4) o[i] = scaled(v[k], i);
    }
    for (int64_t i = threadIdx.x + kNormRegs * kNormThreads; i < n4; i += kNormThreads)
        o[i] = scaled(xr[i], i);
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

namespace {

// Element-wise launches: n elements, one thread each.
void require_elementwise(const char* op, const void* a, const void* out, int64_t n) {
    launch_require(a && out, op, "null tensor");
    launch_require(n >= 0 && (n + kBlock - 1) / kBlock <= kMaxGridX, op,
                   std::to_string(n) + " elements");
}

}  // namespace

void launch_binary(bool mul, const float* a, const float* b, int64_t n, float* out, hipStream_t s) {
    require_elementwise(mul ? "mul" : "add", a, out, n);
    launch_require(b != nullptr, mul ? "mul" : "add", "null tensor");
    if (n > 0)
        hipLaunchKernelGGL(k_binary, dim3(grid_for(n)), dim3(kBlock), 0, s, mul ? 1 : 0, a, b, n,
                           out);
}

void launch_scale(const float* a, float k, int64_t n, float* out, hipStream_t s) {
    require_elementwise("scale", a, out, n);
    if (n > 0) hipLaunchKernelGGL(k_scale, dim3(grid_for(n)), dim3(kBlock), 0, s, a, k, n, out);
}

void launch_softcap(const float* a, float cap, int64_t n, float* out, hipStream_t s) {
    require_elementwise("softcap", a, out, n);
    launch_require(cap > 0.0f, "softcap", "cap must be > 0");
    if (n > 0) hipLaunchKernelGGL(k_softcap, dim3(grid_for(n)), dim3(kBlock), 0, s, a, cap, n, out);
}

void launch_gated(int act, const float* gate, const float* up, int64_t n, float* out,
                  hipStream_t s) {
    require_elementwise("gated_act", gate, out, n);
    launch_require(up != nullptr, "gated_act", "null tensor");
    launch_require(act == 0 || act == 1, "gated_act", "activation " + std::to_string(act));
    if (n > 0)
        hipLaunchKernelGGL(k_gated, dim3(grid_for(n)), dim3(kBlock), 0, s, act, gate, up, n, out);
}

void launch_rms_norm(const float* x, const float* w, int64_t group, int64_t n_groups, float eps,
                     float* out, hipStream_t s) {
    launch_require(x && out, "rms_norm", "null tensor");
    launch_require(group > 0 && n_groups >= 0 && n_groups <= kMaxGridX, "rms_norm",
                   "group " + std::to_string(group) + " x " + std::to_string(n_groups));
    const auto a16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    if (n_groups > 0 && group % 4 == 0 && a16(x) && a16(out) && (!w || a16(w)))
        hipLaunchKernelGGL(k_rms_norm4, dim3(static_cast<unsigned>(n_groups)), dim3(kNormThreads),
                           0, s, x, w, group, eps, out);
    else if (n_groups > 0)
        hipLaunchKernelGGL(k_rms_norm, dim3(static_cast<unsigned>(n_groups)), dim3(kRowBlock), 0, s,
                           x, w, group, eps, out);
}

void launch_spin(long long cycles, hipStream_t s) {
    hipLaunchKernelGGL(k_spin, dim3(1), dim3(1), 0, s, cycles);
}

void launch_get_rows(DType type, const void* table, int64_t n_in, int64_t n_rows,
                     const int32_t* ids, int64_t n, float* out, hipStream_t s) {
    launch_require(table && ids && out, "get_rows", "null tensor");
    launch_require(weight_type_supported(type), "get_rows",
                   "weight type " + std::string(dtype_name(type)));
    launch_require(n_in > 0 && n_in % int64_t(dtype_traits(type).block_elems) == 0 && n_rows > 0,
                   "get_rows",
                   "table shape " + std::to_string(n_in) + "x" + std::to_string(n_rows));
    launch_require(n >= 0 && n <= kMaxGridX, "get_rows", std::to_string(n) + " ids");
    if (n == 0) return;
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
            break;  // rejected above
    }
}

void launch_mat_mul(DType type, const void* w, int64_t n_in, int64_t n_out, const float* x,
                    int64_t n_tok, const float* bias, float* out, hipStream_t s) {
    launch_require(w && x && out, "mat_mul", "null tensor");
    launch_require(weight_type_supported(type), "mat_mul",
                   "weight type " + std::string(dtype_name(type)));
    launch_require(n_in > 0 && n_in % int64_t(dtype_traits(type).block_elems) == 0, "mat_mul",
                   "n_in " + std::to_string(n_in) + " is not a whole number of " +
                       std::string(dtype_name(type)) + " blocks");
    launch_require(n_out >= 0 && n_out <= kMaxGridX && n_tok >= 0, "mat_mul",
                   std::to_string(n_out) + " outputs, " + std::to_string(n_tok) + " tokens");
    if (n_out == 0 || n_tok == 0) return;
    // Fast paths first: a decode matvec for a few tokens, a tiled matmul for prefill; both
    // decline shapes/types/alignments they do not cover and the generic kernel runs.
    if (n_tok <= kMatvecMaxTokens && launch_matvec(type, w, n_in, n_out, x, n_tok, bias, out, s))
        return;
    if (n_tok > kMatvecMaxTokens &&
        launch_mat_mul_tiled(type, w, n_in, n_out, x, n_tok, bias, out, s))
        return;
    launch_require(n_tok <= kMaxGridY, "mat_mul", std::to_string(n_tok) + " tokens");
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
            break;  // rejected above
    }
}

}  // namespace tandem::hip
