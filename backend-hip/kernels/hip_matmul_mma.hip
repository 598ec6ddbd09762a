// Prefill matmul on the matrix units (tensor cores, MFMA, WMMA; hip_mma.h): y[t, o] = W[o, :] .
// x[t, :] (+ bias[o]) in tiles of 128 rows x 64 tokens, 256 threads a block. Per step of 64
// inputs each thread dequantises one 32-weight group of one row and two runs of 8 activations,
// as f16 into shared memory (16-byte stores; rows padded to 144 bytes, so the rows 8 lanes
// store or load at once fall on distinct banks); the waves then multiply their part of the tile
// (wave32: 8 waves of 32 rows x 32 tokens; wave64: 4 of 64 x 32) in 16 x 16 x 16 fragments.
// Weights and activations are rounded to f16, the sums stay f32 (the Vulkan backend's
// matmul_coopmat.comp does the same); activations beyond f16's range saturate at +-65504.
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdint>

#include "hip_blocks.h"
#include "hip_mma.h"
#include "hip_ops.h"

namespace tandem::hip {
namespace {

constexpr int kRows = 128, kToks = 64, kThreads = 256;

#if TANDEM_MMA_KIND != 0  // this device compilation has matrix units
constexpr int kStepK = 64;
constexpr int kLd = kStepK + 8;  // halves a padded tile row: 144 bytes

__device__ inline float to_f16_range(float v) {
    return fminf(fmaxf(v, -65504.0f), 65504.0f);
}

#endif

// Two blocks an SM / CU (128 registers a thread on NVIDIA): one block's staging overlaps the
// other's products.
template <uint32_t TypeId>
__global__ void __launch_bounds__(kThreads, 2)
    k_mat_mul_mma(const uint8_t* w, int64_t n_in, int64_t row_stride, int64_t n_out, const float* x,
                  int64_t n_tok, const float* bias, float* out) {
#if TANDEM_MMA_KIND != 0
    constexpr DType T = DType(TypeId);  // a number: see type_id() (hip_packed.h)
    constexpr int kWaves = kThreads / kMmaWave, kWaveRows = kRows / (kWaves / 2);
    constexpr int FM = kWaveRows / 16, FN = 2;          // fragments a wave: FM x 16 rows, 32 tokens
    __shared__ __align__(16) uint16_t ws[kRows * kLd];  // [row][k] f16 bits
    __shared__ __align__(16) uint16_t xs[kToks * kLd];  // [token][k] f16 bits
    const int tid = int(threadIdx.x), wave = tid / kMmaWave, lane = tid % kMmaWave;
    const int wm = (wave % (kWaves / 2)) * kWaveRows, wn = (wave / (kWaves / 2)) * 32;
    const int64_t m0 = int64_t(blockIdx.x) * kRows, n0 = int64_t(blockIdx.y) * kToks;
    MmaAcc acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) mma_zero(acc[i][j]);
    // The 32 weights this thread dequantises each step; rows past the end read the last row
    // (valid memory) and are never written out.
    const int my_row = tid % kRows, my_half = tid / kRows;
    const uint8_t* wrow = w + (m0 + my_row < n_out ? m0 + my_row : n_out - 1) * row_stride;
    // A step's global reads, into registers: the weight group and two runs of 8 activations
    // (64 tokens x 64 inputs, 8 threads on a token). Issuing them a step ahead, before the
    // products of the step before, measured 3 % slower on the H200 (session 20).
    Group32<T> group;
    bool group_live = false;
    float4 xr[2][2];
    auto load_step = [&](int64_t k0) {
        const int64_t k = k0 + 32 * my_half;
        group_live = k < n_in;
        if (group_live) group.load(wrow, k);
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int i = tid + kThreads * r, tok = i / 8, c = i % 8;
            const int64_t t = n0 + tok, col = k0 + 8 * c;
            xr[r][0] = xr[r][1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (t < n_tok && col < n_in) {
                const auto* p = reinterpret_cast<const float4*>(x + t * n_in + col);
                xr[r][0] = p[0], xr[r][1] = p[1];
            }
        }
    };
    for (int64_t k0 = 0; k0 < n_in; k0 += kStepK) {
        load_step(k0);
        {
            auto* dst = reinterpret_cast<uint4*>(ws + my_row * kLd + 32 * my_half);
            float v[32];
            if (group_live) {
                group.decode(v);
            } else {
#pragma unroll
                for (int e = 0; e < 32; ++e) v[e] = 0.0f;
            }
#pragma unroll
            for (int c = 0; c < 4; ++c) dst[c] = pack8_half(v + 8 * c);
        }
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int i = tid + kThreads * r, tok = i / 8, c = i % 8;
            const float4 a = xr[r][0], b = xr[r][1];
            const float v[8] = {to_f16_range(a.x), to_f16_range(a.y), to_f16_range(a.z),
                                to_f16_range(a.w), to_f16_range(b.x), to_f16_range(b.y),
                                to_f16_range(b.z), to_f16_range(b.w)};
            *reinterpret_cast<uint4*>(xs + tok * kLd + 8 * c) = pack8_half(v);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kStepK; kk += 16) {
            MmaA a[FM];
            MmaB b[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) mma_load_a(a[i], ws + (wm + 16 * i) * kLd + kk, kLd, lane);
#pragma unroll
            for (int j = 0; j < FN; ++j) mma_load_b(b[j], xs + (wn + 16 * j) * kLd + kk, kLd, lane);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) mma_run(acc[i][j], a[i], b[j]);
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
                const int64_t t = n0 + wn + 16 * j + mma_acc_n(lane, e);
                if (o < n_out && t < n_tok)
                    out[t * n_out + o] = acc[i][j].v[e] + (bias ? bias[o] : 0.0f);
            }
#endif
}

// What the device's own compilation of this file got (TANDEM_MMA_KIND of its architecture).
__global__ void k_mma_kind(int* out) {
    *out = TANDEM_MMA_KIND;
}

template <DType T>
void launch_as(dim3 grid, const uint8_t* w, int64_t n_in, int64_t stride, int64_t n_out,
               const float* x, int64_t n_tok, const float* bias, float* out, hipStream_t s) {
    if constexpr (T != DType::F32 && T != DType::BF16)  // refused by the caller
        hipLaunchKernelGGL(k_mat_mul_mma<type_id(T)>, grid, dim3(kThreads), 0, s, w, n_in, stride,
                           n_out, x, n_tok, bias, out);
}

}  // namespace

int mma_kind(int device) {
    int* d = nullptr;
    int kind = 0;
    if (hipSetDevice(device) != hipSuccess ||
        hipMalloc(reinterpret_cast<void**>(&d), 4) != hipSuccess)
        return 0;
    hipLaunchKernelGGL(k_mma_kind, dim3(1), dim3(1), 0, nullptr, d);
    if (hipMemcpy(&kind, d, 4, hipMemcpyDeviceToHost) != hipSuccess) kind = 0;
    (void)hipFree(d);
    return kind;
}

const char* mma_kind_name(int kind) {
    switch (kind) {
        case 1:
            return "mma.sync m16n8k16 (NVIDIA tensor cores)";
        case 2:
            return "v_mfma_f32_16x16x16f16 (CDNA matrix cores)";
        case 3:
            return "v_wmma_f32_16x16x16_f16 (RDNA3 WMMA)";
        default:
            return "none";
    }
}

bool mma_matmul_takes(DType type) {
    // f32 and bf16 weights keep the f32 tiles: f16 would round them (bf16's range too).
    return type != DType::F32 && type != DType::BF16;
}

bool launch_mat_mul_mma(DType kind, const void* w, int64_t n_in, int64_t n_out, const float* x,
                        int64_t n_tok, const float* bias, float* out, hipStream_t s) {
    const DType type = file_type(kind);
    if (!mma_matmul_takes(type)) return false;
    if (n_tok < 1 || n_out < 1 || n_in < 32 || n_in % 32 != 0 || !aligned(x, 16)) return false;
    const int64_t gx = (n_out + kRows - 1) / kRows, gy = (n_tok + kToks - 1) / kToks;
    if (gx > kMaxGridX || gy > kMaxGridY) return false;
    const auto stride = static_cast<int64_t>(row_bytes(type, static_cast<uint64_t>(n_in)));
    const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
    const auto* wb = static_cast<const uint8_t*>(w);
    bool ok = false;
    visit_weight_layout(kind, [&](auto P) {
        constexpr DType T = decltype(P)::value;
        if (!rows_aligned<T>(w, stride)) return;
        launch_as<T>(grid, wb, n_in, stride, n_out, x, n_tok, bias, out, s);
        ok = true;
    });
    return ok;
}

}  // namespace tandem::hip
