// Element-wise, row-wise and matrix kernels of the HIP backend. Reductions go through shared
// memory with a power-of-two block, so they hold for wave32 (RDNA, NVIDIA) and wave64 (CDNA)
// alike.
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdint>

#include "hip_decode.h"
#include "hip_launch_overlap.h"
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

// act(x): 0 = SiLU, 1 = GELU (tanh approximation).
__device__ inline float gate_act(int act, float x) {
    if (act == 0) return x / (1.0f + expf(-x));
    constexpr float kSqrt2OverPi = 0.79788456080286535588f;
    return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
}

__global__ void k_gated(int act, const float* gate, const float* up, int64_t n, float* out) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = gate_act(act, gate[i]) * up[i];
}

// Reads n16 16-byte words at p, the grid striding over them, and leaves each block's xor in
// out[block] so the loads stay (the weight-placement probe: read bandwidth of a range).
__global__ void __launch_bounds__(kBlock)
    k_read_probe(const uint4* p, uint64_t n16, uint32_t* out) {
    uint32_t acc = 0;
    const uint64_t stride = uint64_t(gridDim.x) * kBlock;
    for (uint64_t i = uint64_t(blockIdx.x) * kBlock + threadIdx.x; i < n16; i += stride) {
        const uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    __shared__ uint32_t red[kBlock];
    red[threadIdx.x] = acc;
    __syncthreads();
    for (int w = kBlock / 2; w > 0; w /= 2) {
        if (int(threadIdx.x) < w) red[threadIdx.x] ^= red[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = red[0];
}

// One thread holding the stream until the host raises *release (mapped host memory) to target
// or max_cycles clocks pass (the profiler's hold before a chunk of a step's nodes; the bound only
// keeps a host that never releases from stopping the GPU for good).
__global__ void k_hold(const volatile int* release, int target, long long max_cycles) {
    const long long t0 = clock64();
    while (*release < target && clock64() - t0 < max_cycles) {
    }
}

constexpr int kNormThreads = 256;
constexpr int kNormRegs = 4;  // float4s per thread held in registers: rows up to 4096 floats

// GatedAct that also leaves its output's q8 activations (n4 float4s, rows of a multiple of 256
// floats, so neither blocks of 32 nor the layout's groups straddle rows and the flat layout is
// the per-row one).
__global__ void __launch_bounds__(kBlock)
    k_gated4_q8(int act, const float4* gate, const float4* up, int64_t n4, float4* out, int8_t* qs,
                float2* ds) {
    const int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x;
    const bool live = i < n4;
    grid_wait();
    grid_launch_dependents();
    float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (live) {
        const float4 g = gate[i], u = up[i];
        a = make_float4(gate_act(act, g.x) * u.x, gate_act(act, g.y) * u.y,
                        gate_act(act, g.z) * u.z, gate_act(act, g.w) * u.w);
        out[i] = a;
    }
    q8_store4(a, i, live, qs, ds);  // every lane: kBlock is a multiple of the warp
}

// The fast RMSNorm: grid.x = groups of `group` floats (a multiple of 4, 16-byte aligned rows),
// 256 threads. Every thread issues all its 16-byte loads before using them and keeps them in
// registers (a row is read once up to 4096 floats), 32-lane shuffles then one shared step
// reduce the sum of squares. Q8: also the output's q8 activations for the matmul reading it
// (group = a whole row, a multiple of 32: qs [rows, group] int8, ds [rows, group / 32]).
// ADD: x + b first (the residual add before the norm, one launch less), written to sum; rows
// of at most kNormRegs * kNormThreads float4s only (read once: the output may then be written
// over an input's row).
template <bool Q8, bool ADD = false>
__global__ void __launch_bounds__(kNormThreads)
    k_rms_norm4(const float* x, const float* w, int64_t group, float eps, float* out, int8_t* qs,
                float2* ds, const float* b, float* sum) {
    __shared__ float part[kNormThreads / kLaneGroup];
    grid_wait();
    grid_launch_dependents();
    const int64_t n4 = group / 4;
    const auto* xr = reinterpret_cast<const float4*>(x + int64_t(blockIdx.x) * group);
    auto* o = reinterpret_cast<float4*>(out + int64_t(blockIdx.x) * group);
    const auto* w4 = reinterpret_cast<const float4*>(w);
    if constexpr (Q8) {
        qs += int64_t(blockIdx.x) * group;
        ds += int64_t(blockIdx.x) * (group / 32);
    }
    // The weights are loaded with the row, before the sum's barrier (not one more trip after).
    const float4 one = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
    float4 v[kNormRegs], wv[kNormRegs];
#pragma unroll
    for (int k = 0; k < kNormRegs; ++k) {
        const int64_t i = threadIdx.x + int64_t(k) * kNormThreads;
        v[k] = i < n4 ? xr[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        wv[k] = w4 && i < n4 ? w4[i] : one;
    }
    if constexpr (ADD) {
        const auto* br = reinterpret_cast<const float4*>(b + int64_t(blockIdx.x) * group);
        auto* sr = reinterpret_cast<float4*>(sum + int64_t(blockIdx.x) * group);
#pragma unroll
        for (int k = 0; k < kNormRegs; ++k) {
            const int64_t i = threadIdx.x + int64_t(k) * kNormThreads;
            if (i < n4) {
                const float4 c = br[i];
                v[k] = make_float4(v[k].x + c.x, v[k].y + c.y, v[k].z + c.z, v[k].w + c.w);
                sr[i] = v[k];
            }
        }
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
    auto scaled = [&](float4 a, float4 m) {
        return make_float4(a.x * s * m.x, a.y * s * m.y, a.z * s * m.z, a.w * s * m.w);
    };
    // Trips are uniform over the block (the q8 shuffles need every lane): the registers first,
    // then the rest of a long row, read again.
    auto put = [&](float4 a, int64_t i, bool live) {
        if (live) o[i] = a;
        if constexpr (Q8) q8_store4(a, i, live, qs, ds);
    };
#pragma unroll
    for (int k = 0; k < kNormRegs; ++k) {
        const int64_t i = threadIdx.x + int64_t(k) * kNormThreads;
        if (int64_t(k) * kNormThreads < n4)
            put(i < n4 ? scaled(v[k], wv[k]) : make_float4(0.0f, 0.0f, 0.0f, 0.0f), i, i < n4);
    }
    for (int64_t base = kNormRegs * kNormThreads; base < n4; base += kNormThreads) {
        const int64_t i = base + threadIdx.x;
        put(i < n4 ? scaled(xr[i], w4 ? w4[i] : one) : make_float4(0.0f, 0.0f, 0.0f, 0.0f), i,
            i < n4);
    }
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
template <uint32_t TypeId>
__global__ void k_get_rows(const void* table, int64_t n_in, int64_t row_stride, int64_t n_rows,
                           const int32_t* ids, float* out) {
    constexpr DType T = DType(TypeId);  // a number: see type_id() (hip_packed.h)
    grid_wait();
    grid_launch_dependents();
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
template <uint32_t TypeId>
__global__ void k_mat_mul(const void* w, int64_t n_in, int64_t row_stride, const float* x,
                          const float* bias, int64_t n_out, float* out) {
    constexpr DType T = DType(TypeId);  // a number: see type_id() (hip_packed.h)
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
        TANDEM_LAUNCH_OVERLAPPED(k_rms_norm4<false>, dim3(static_cast<unsigned>(n_groups)),
                                 dim3(kNormThreads), 0, s, x, w, group, eps, out, nullptr, nullptr,
                                 nullptr, nullptr);
    else if (n_groups > 0)
        hipLaunchKernelGGL(k_rms_norm, dim3(static_cast<unsigned>(n_groups)), dim3(kRowBlock), 0, s,
                           x, w, group, eps, out);
}

void launch_hold(const int* release, int target, long long max_cycles, hipStream_t s) {
    hipLaunchKernelGGL(k_hold, dim3(1), dim3(1), 0, s, release, target, max_cycles);
}

void launch_read_probe(const void* p, uint64_t bytes, uint32_t* out, int blocks, hipStream_t s) {
    launch_require(
        p && out && blocks > 0 && reinterpret_cast<uintptr_t>(p) % 16 == 0 && bytes % 16 == 0,
        "read_probe", "a 16-byte aligned range of whole 16-byte words");
    hipLaunchKernelGGL(k_read_probe, dim3(unsigned(blocks)), dim3(kBlock), 0, s,
                       static_cast<const uint4*>(p), bytes / 16, out);
}

bool launch_rms_norm_q8(const float* x, const float* w, int64_t cols, int64_t rows, float eps,
                        float* out, void* q8, hipStream_t s) {
    const auto a16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    if (!x || !out || !q8 || cols % kQ8LayoutGroup != 0 || rows < 1 || rows > kMatvecMaxTokens ||
        !a16(x) || !a16(out) || (w && !a16(w)))
        return false;
    auto* qs = static_cast<int8_t*>(q8);
    auto* ds = reinterpret_cast<float2*>(qs + rows * cols);
    TANDEM_LAUNCH_OVERLAPPED(k_rms_norm4<true>, dim3(static_cast<unsigned>(rows)),
                             dim3(kNormThreads), 0, s, x, w, cols, eps, out, qs, ds, nullptr,
                             nullptr);
    return true;
}

bool launch_add_rms_norm(const float* a, const float* b, float* sum, const float* w, int64_t cols,
                         int64_t rows, float eps, float* out, void* q8, hipStream_t s) {
    const auto a16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    if (!a || !b || !sum || !out || cols % 4 != 0 || cols / 4 > kNormRegs * kNormThreads ||
        rows < 1 || rows > kMaxGridX || !a16(a) || !a16(b) || !a16(sum) || !a16(out) ||
        (w && !a16(w)))
        return false;
    if (q8) {
        if (cols % kQ8LayoutGroup != 0 || rows > kMatvecMaxTokens) return false;
        auto* qs = static_cast<int8_t*>(q8);
        auto* ds = reinterpret_cast<float2*>(qs + rows * cols);
        TANDEM_LAUNCH_OVERLAPPED((k_rms_norm4<true, true>), dim3(static_cast<unsigned>(rows)),
                                 dim3(kNormThreads), 0, s, a, w, cols, eps, out, qs, ds, b, sum);
    } else {
        TANDEM_LAUNCH_OVERLAPPED((k_rms_norm4<false, true>), dim3(static_cast<unsigned>(rows)),
                                 dim3(kNormThreads), 0, s, a, w, cols, eps, out, nullptr, nullptr,
                                 b, sum);
    }
    return true;
}

bool launch_gated_q8(int act, const float* gate, const float* up, int64_t cols, int64_t rows,
                     float* out, void* q8, hipStream_t s) {
    const auto a16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    if (!gate || !up || !out || !q8 || cols % kQ8LayoutGroup != 0 || rows < 1 ||
        rows > kMatvecMaxTokens || !a16(gate) || !a16(up) || !a16(out))
        return false;
    enqueue_gated_q8(act, gate, up, cols, rows, out, q8, s);
    return true;
}

void enqueue_gated_q8(int act, const float* gate, const float* up, int64_t cols, int64_t rows,
                      float* out, void* q8, hipStream_t s) {
    const int64_t n4 = rows * cols / 4;
    auto* qs = static_cast<int8_t*>(q8);
    auto* ds = reinterpret_cast<float2*>(qs + rows * cols);
    TANDEM_LAUNCH_OVERLAPPED(k_gated4_q8, dim3(static_cast<unsigned>((n4 + kBlock - 1) / kBlock)),
                             dim3(kBlock), 0, s, act, reinterpret_cast<const float4*>(gate),
                             reinterpret_cast<const float4*>(up), n4,
                             reinterpret_cast<float4*>(out), qs, ds);
}

void launch_get_rows(DType kind, const void* table, int64_t n_in, int64_t n_rows,
                     const int32_t* ids, int64_t n, float* out, hipStream_t s) {
    launch_require(table && ids && out, "get_rows", "null tensor");
    const DType type = file_type(kind);  // kind: the layout the kernels read (hip_packed.h)
    launch_require(weight_type_supported(type), "get_rows",
                   "weight type " + std::string(dtype_name(type)));
    launch_require(n_in > 0 && n_in % int64_t(dtype_traits(type).block_elems) == 0 && n_rows > 0 &&
                       (!is_packed(kind) || n_in % packed_group_weights(kind) == 0),
                   "get_rows",
                   "table shape " + std::to_string(n_in) + "x" + std::to_string(n_rows));
    launch_require(n >= 0 && n <= kMaxGridX, "get_rows", std::to_string(n) + " ids");
    if (n == 0) return;
    const dim3 grid(static_cast<unsigned>(n)), block(kBlock);
    const auto stride = static_cast<int64_t>(row_bytes(type, static_cast<uint64_t>(n_in)));
    if (visit_packed(kind, [&](auto P) {
            TANDEM_LAUNCH_OVERLAPPED(k_get_rows<type_id(decltype(P)::value)>, grid, block, 0, s,
                                     table, n_in, stride, n_rows, ids, out);
        }))
        return;
    switch (type) {
#define TANDEM_CASE(T)                                                                          \
    case DType::T:                                                                              \
        TANDEM_LAUNCH_OVERLAPPED(k_get_rows<type_id(DType::T)>, grid, block, 0, s, table, n_in, \
                                 stride, n_rows, ids, out);                                     \
        break;
        TANDEM_HIP_WEIGHT_TYPES(TANDEM_CASE)
#undef TANDEM_CASE
        default:
            break;  // rejected above
    }
}

void launch_mat_mul(DType kind, const void* w, int64_t n_in, int64_t n_out, const float* x,
                    int64_t n_tok, const float* bias, float* out, hipStream_t s, bool mma,
                    float* split_scratch, uint64_t split_floats, const MmaInputs& mma_in) {
    launch_require(w && x && out, "mat_mul", "null tensor");
    const DType type = file_type(kind);  // kind: the layout the kernels read (hip_packed.h)
    launch_require(weight_type_supported(type), "mat_mul",
                   "weight type " + std::string(dtype_name(type)));
    launch_require(n_in > 0 && n_in % int64_t(dtype_traits(type).block_elems) == 0, "mat_mul",
                   "n_in " + std::to_string(n_in) + " is not a whole number of " +
                       std::string(dtype_name(type)) + " blocks");
    launch_require(!is_packed(kind) || n_in % packed_group_weights(kind) == 0, "mat_mul",
                   "repacked rows of " + std::to_string(n_in));
    launch_require(n_out >= 0 && n_out <= kMaxGridX && n_tok >= 0, "mat_mul",
                   std::to_string(n_out) + " outputs, " + std::to_string(n_tok) + " tokens");
    if (n_out == 0 || n_tok == 0) return;
    // Fast paths first: a decode matvec for a few tokens, the matrix units or a tiled matmul for
    // prefill; each declines shapes/types/alignments they do not cover and the generic kernel runs.
    if (n_tok <= kMatvecMaxTokens && launch_matvec(kind, w, n_in, n_out, x, n_tok, bias, out, s))
        return;
    if (n_tok > kMatvecMaxTokens && mma &&
        launch_mat_mul_mma(kind, w, n_in, n_out, x, n_tok, bias, out, s, mma_in, split_scratch,
                           split_floats))
        return;
    if (n_tok > kMatvecMaxTokens && launch_mat_mul_tiled(kind, w, n_in, n_out, x, n_tok, bias, out,
                                                         s, split_scratch, split_floats))
        return;
    launch_require(n_tok <= kMaxGridY, "mat_mul", std::to_string(n_tok) + " tokens");
    const dim3 grid(static_cast<unsigned>(n_out), static_cast<unsigned>(n_tok)), block(kRowBlock);
    const auto stride = static_cast<int64_t>(row_bytes(type, static_cast<uint64_t>(n_in)));
    if (visit_packed(kind, [&](auto P) {
            hipLaunchKernelGGL(k_mat_mul<type_id(decltype(P)::value)>, grid, block, 0, s, w, n_in,
                               stride, x, bias, n_out, out);
        }))
        return;
    switch (type) {
#define TANDEM_CASE(T)                                                                          \
    case DType::T:                                                                              \
        hipLaunchKernelGGL(k_mat_mul<type_id(DType::T)>, grid, block, 0, s, w, n_in, stride, x, \
                           bias, n_out, out);                                                   \
        break;
        TANDEM_HIP_WEIGHT_TYPES(TANDEM_CASE)
#undef TANDEM_CASE
        default:
            break;  // rejected above
    }
}

}  // namespace tandem::hip
