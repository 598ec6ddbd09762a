// Prefill matmul on the matrix units (tensor cores, MFMA, WMMA; hip_mma.h): y[t, o] = W[o, :] .
// x[t, :] (+ bias[o]) in tiles of 128 rows x 64 tokens, 256 threads a block (mma_tile,
// hip_mma_tile.h).
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdint>

#include "hip_blocks.h"
#include "hip_mma.h"
#include "hip_mma_tile.h"
#include "hip_ops.h"

namespace tandem::hip {
namespace {

constexpr int kRows = kMmaTileRows, kToks = kMmaTileToks, kThreads = kMmaTileThreads;

// Two blocks an SM / CU (128 registers a thread on NVIDIA): one block's staging overlaps the
// other's products. Block (row tile, token tile): tokens n0.. of x.
template <uint32_t TypeId>
__global__ void __launch_bounds__(kThreads, 2)
    k_mat_mul_mma(const uint8_t* w, int64_t n_in, int64_t row_stride, int64_t n_out, const float* x,
                  int64_t n_tok, const float* bias, float* out) {
#if TANDEM_MMA_KIND != 0
    constexpr DType T = DType(TypeId);  // a number: see type_id() (hip_packed.h)
    const int64_t m0 = int64_t(blockIdx.x) * kRows, n0 = int64_t(blockIdx.y) * kToks;
    const float* xrow[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int64_t t = n0 + mma_tile_token(int(threadIdx.x), r);
        xrow[r] = t < n_tok ? x + t * n_in : nullptr;
    }
    mma_tile<T>(w, n_in, row_stride, n_out, m0, xrow, [&](int64_t o, int tok, float v) {
        const int64_t t = n0 + tok;
        if (t < n_tok) out[t * n_out + o] = v + (bias ? bias[o] : 0.0f);
    });
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
