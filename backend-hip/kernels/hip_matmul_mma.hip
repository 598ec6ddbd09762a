// Prefill matmul on the matrix units (tensor cores, MFMA, WMMA; hip_mma.h): y[t, o] = W[o, :] .
// x[t, :] (+ bias[o]) in tiles of 128 rows x 128 tokens (64 for steps of at most 64 tokens), 256
// threads a block (mma_tile, hip_mma_tile.h).
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <algorithm>
#include <cstdint>
#include <string>

#include "hip_blocks.h"
#include "hip_mma.h"
#include "hip_mma_tile.h"
#include "hip_ops.h"
#include "tandem/backend/input_split.h"

namespace tandem::hip {
namespace {

constexpr int kRows = kMmaTileRows, kToks = kMmaTileToks, kThreads = kMmaTileThreads;

// Two blocks an SM / CU (128 registers a thread on NVIDIA): one block's staging overlaps the
// other's products. Block (row tile, token tile of Toks, split z): tokens n0.. of x (f32, or f16
// with kMmaX16), inputs z * k_split .. of the rows (w_split: their bytes in a row), into part z
// of out (n_tok x n_out floats a part) where the inputs are split, else out itself, with the bias.
template <uint32_t TypeId, int Mode, int Toks>
__global__ void __launch_bounds__(kThreads, 2)
    k_mat_mul_mma(const uint8_t* w, int64_t n_in, int64_t row_stride, int64_t n_out, const void* x,
                  int64_t n_tok, const float* bias, float* out, int64_t k_split, int64_t w_split) {
#if TANDEM_MMA_KIND != 0
    constexpr DType T = DType(TypeId);  // a number: see type_id() (hip_packed.h)
    const int64_t m0 = int64_t(blockIdx.x) * kRows, n0 = int64_t(blockIdx.y) * Toks;
    const int64_t x_bytes = (Mode & kMmaX16) ? 2 : 4, row_bytes = n_in * x_bytes;
    const int64_t k0 = int64_t(blockIdx.z) * k_split;
    const int64_t k_len = k0 + k_split < n_in ? k_split : n_in - k0;
    out += int64_t(blockIdx.z) * n_tok * n_out;
    const void* xrow[Toks / 32];
#pragma unroll
    for (int r = 0; r < Toks / 32; ++r) {
        const int64_t t = n0 + mma_tile_token(int(threadIdx.x), r);
        xrow[r] =
            t < n_tok ? static_cast<const uint8_t*>(x) + t * row_bytes + k0 * x_bytes : nullptr;
    }
    mma_tile<T, Mode, Toks>(w + int64_t(blockIdx.z) * w_split, k_len, row_stride, n_out, m0, xrow,
                            [&](int64_t o, int tok, float v) {
                                const int64_t t = n0 + tok;
                                if (t < n_tok) out[t * n_out + o] = v + (bias ? bias[o] : 0.0f);
                            });
#endif
}

// y[i] = x[i] as f16 bits, saturated at +-65504 and rounded to nearest (what the tiles do to an
// f32 activation), 8 values a thread.
__global__ void k_to_f16(const float4* x, uint4* y, int64_t n8) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n8) return;
    const float4 a = x[2 * i], b = x[2 * i + 1];
    const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    float c[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) c[e] = fminf(fmaxf(v[e], -65504.0f), 65504.0f);
    y[i] = pack8_half(c);
}

// What the device's own compilation of this file got (TANDEM_MMA_KIND of its architecture).
__global__ void k_mma_kind(int* out) {
    *out = TANDEM_MMA_KIND;
}

constexpr int64_t kMmaStepK = 64;  // mma_tile's inputs a step
// How a matrix-unit matmul splits its inputs where its grid is small: short prompts, where the
// 8B's 4096-row projections are 32 blocks of 128 rows at 64 tokens on an H200's 132 SMs, each
// block walking all 4096 (or 14336) inputs. The parts are whole units of `unit` inputs (the
// weight layout's: a repacked Q6_K row's groups of 2048, 256 for the other repacked types and the
// K-quants, else a step's 64). Counted in 64-token tiles whatever the tile width, so both widths
// split alike (the same bits).
InputSplit mma_split_by(int64_t unit, int64_t n_in, int64_t n_out, int64_t n_tok) {
    if (n_tok <= kMatvecMaxTokens) return {n_in, 1};
    const int64_t blocks = ((n_out + kRows - 1) / kRows) * ((n_tok + kToks - 1) / kToks);
    return split_inputs(blocks, n_in, unit, n_in / unit);
}

InputSplit mma_split(DType kind, int64_t n_in, int64_t n_out, int64_t n_tok) {
    const int64_t unit = is_packed(kind)
                             ? packed_group_weights(kind)
                             : std::max<int64_t>(kMmaStepK, dtype_traits(kind).block_elems);
    return mma_split_by(unit, n_in, n_out, n_tok);
}

// The launch's inputs split (InputSplit: grid.z parts of k_split inputs, w_split bytes of a row).
struct MmaLaunch {
    dim3 grid;
    int64_t k_split, w_split;
};

// Tiles of 128 tokens where the step has more than 64 (in.wide): each weight is dequantised once
// per 128 tokens and each fragment loaded from shared memory meets twice the products. H200, 8B
// pp512 (docs/hip.md, session 25): Q4_0 8460-8663 (64-token tiles) -> 9826-9839 tok/s, Q8_0 +18 %,
// Q4_K +19 %; at most 64 tokens the narrower tile does no work on padding.
template <DType T, int Mode>
void launch_mode(MmaLaunch l, const uint8_t* w, int64_t n_in, int64_t stride, int64_t n_out,
                 const void* x, int64_t n_tok, bool wide, const float* bias, float* out,
                 hipStream_t s) {
    // (kernel names with a comma: not macro arguments)
    if (wide && n_tok > kToks) {
        l.grid.y = static_cast<unsigned>((n_tok + 2 * kToks - 1) / (2 * kToks));
        auto* kernel = k_mat_mul_mma<type_id(T), Mode, 2 * kToks>;
        hipLaunchKernelGGL(kernel, l.grid, dim3(kThreads), 0, s, w, n_in, stride, n_out, x, n_tok,
                           bias, out, l.k_split, l.w_split);
        return;
    }
    auto* kernel = k_mat_mul_mma<type_id(T), Mode, kToks>;
    hipLaunchKernelGGL(kernel, l.grid, dim3(kThreads), 0, s, w, n_in, stride, n_out, x, n_tok, bias,
                       out, l.k_split, l.w_split);
}

template <DType T>
void launch_as(MmaLaunch grid, const uint8_t* w, int64_t n_in, int64_t stride, int64_t n_out,
               const float* x, const MmaInputs& in, int64_t n_tok, const float* bias, float* out,
               hipStream_t s) {
    const void* xs = in.x16 ? static_cast<const void*>(in.x16) : x;
    if constexpr (T != DType::F32 && T != DType::BF16) {  // refused by the caller
        if constexpr (T == kQ4_0R || T == kQ8_0R) {
            if (in.f32_decode) {
                if (in.x16)
                    launch_mode<T, kMmaX16 | kMmaF32Decode>(grid, w, n_in, stride, n_out, xs, n_tok,
                                                            in.wide, bias, out, s);
                else
                    launch_mode<T, kMmaF32Decode>(grid, w, n_in, stride, n_out, xs, n_tok, in.wide,
                                                  bias, out, s);
                return;
            }
        }
        if (in.x16)
            launch_mode<T, kMmaX16>(grid, w, n_in, stride, n_out, xs, n_tok, in.wide, bias, out, s);
        else
            launch_mode<T, 0>(grid, w, n_in, stride, n_out, xs, n_tok, in.wide, bias, out, s);
    }
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

void launch_to_f16(const float* x, int64_t n, uint16_t* y, hipStream_t s) {
    launch_require(x && y && n >= 0 && n % 8 == 0 && aligned(x, 16) && aligned(y, 16), "to_f16",
                   std::to_string(n) + " values (whole 8s, 16-byte aligned)");
    const int64_t n8 = n / 8, blocks = (n8 + 255) / 256;
    if (blocks == 0) return;
    launch_require(blocks <= kMaxGridX, "to_f16", std::to_string(n) + " values");
    hipLaunchKernelGGL(k_to_f16, dim3(static_cast<unsigned>(blocks)), dim3(256), 0, s,
                       reinterpret_cast<const float4*>(x), reinterpret_cast<uint4*>(y), n8);
}

uint64_t mat_mul_mma_split_floats(int64_t n_in, int64_t n_out, int64_t n_tok) {
    // The finest split any layout takes (kMmaStepK inputs a unit) needs the most room.
    return split_part_floats(mma_split_by(kMmaStepK, n_in, n_out, n_tok), n_tok, n_out);
}

bool launch_mat_mul_mma(DType kind, const void* w, int64_t n_in, int64_t n_out, const float* x,
                        int64_t n_tok, const float* bias, float* out, hipStream_t s,
                        const MmaInputs& given, float* split_scratch, uint64_t split_floats) {
    const DType type = file_type(kind);
    if (!mma_matmul_takes(type)) return false;
    if (n_tok < 1 || n_out < 1 || n_in < 32 || n_in % 32 != 0 || !aligned(x, 16)) return false;
    MmaInputs in = given;
    if (in.x16 && !aligned(in.x16, 16)) in.x16 = nullptr;
    const int64_t gx = (n_out + kRows - 1) / kRows, gy = (n_tok + kToks - 1) / kToks;
    if (gx > kMaxGridX || gy > kMaxGridY) return false;
    const auto stride = static_cast<int64_t>(row_bytes(type, static_cast<uint64_t>(n_in)));
    const InputSplit plan = mma_split(kind, n_in, n_out, n_tok);
    const uint64_t parts = split_part_floats(plan, n_tok, n_out);
    const bool split = parts > 0 && split_scratch && parts <= split_floats;
    const MmaLaunch l{
        dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy),
             static_cast<unsigned>(split ? plan.splits : 1)),
        split ? plan.k_split : n_in,
        split ? static_cast<int64_t>(row_bytes(type, static_cast<uint64_t>(plan.k_split))) : 0};
    const auto* wb = static_cast<const uint8_t*>(w);
    bool ok = false;
    visit_weight_layout(kind, [&](auto P) {
        constexpr DType T = decltype(P)::value;
        if (!rows_aligned<T>(w, stride)) return;
        launch_as<T>(l, wb, n_in, stride, n_out, x, in, n_tok, split ? nullptr : bias,
                     split ? split_scratch : out, s);
        ok = true;
    });
    if (ok && split)
        launch_split_sum(split_scratch, int(plan.splits), n_tok * n_out, n_out, bias, out, s);
    return ok;
}

}  // namespace tandem::hip
