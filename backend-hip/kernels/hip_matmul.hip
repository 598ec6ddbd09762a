// Fast matmul paths of the HIP backend.
// - Decode matvec (n_tok <= 8): each group of 32 lanes owns kMvRows output rows; lane l decodes
//   units l, l+32, ... of those rows (whole blocks, wide loads, coalesced across the group), the
//   activation slice of a unit is read once per piece and reused for every row of the group,
//   and the partial sums meet through width-32 shuffles (wave32 and wave64 alike).
// - Prefill (n_tok > 8): 64 tokens x 64 outputs per block; each k-step dequantises a 64x64
//   weight tile and stages a 64x64 activation tile in shared memory; 256 threads own 4x4
//   outputs each.
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <algorithm>
#include <cstdint>
#include <string>

#include "hip_blocks.h"
#include "hip_ops.h"
#include "tandem/backend/input_split.h"

namespace tandem::hip {
namespace {

constexpr int kMvThreads = 128;
constexpr int kMvRows = 2;  // output rows per 32-lane group
constexpr int kMvRowsPerBlock = kMvThreads / kLaneGroup * kMvRows;

// acc[r][t] += W[row r, unit u] . x[t, unit u] for the raw units of kMvRows rows.
template <DType T, int TM>
__device__ inline void matvec_unit(const typename Blocks<T>::Raw* raw, int64_t u, const float* x,
                                   int64_t n_in, int n_tok, float (&acc)[kMvRows][TM]) {
    using B = Blocks<T>;
#pragma unroll
    for (int p = 0; p < B::kWeights / 8; ++p) {
        const int64_t i0 = u * B::kWeights + 8 * p;
        float xv[TM][8];
#pragma unroll
        for (int t = 0; t < TM; ++t) {
            if (t < n_tok) {
                const auto* xp = reinterpret_cast<const float4*>(x + t * n_in + i0);
                const float4 a = xp[0], b = xp[1];
                xv[t][0] = a.x, xv[t][1] = a.y, xv[t][2] = a.z, xv[t][3] = a.w;
                xv[t][4] = b.x, xv[t][5] = b.y, xv[t][6] = b.z, xv[t][7] = b.w;
            } else {
#pragma unroll
                for (int i = 0; i < 8; ++i) xv[t][i] = 0.0f;
            }
        }
#pragma unroll
        for (int r = 0; r < kMvRows; ++r) {
            float wv[8];
            B::piece(raw[r], p, wv);
#pragma unroll
            for (int t = 0; t < TM; ++t)
#pragma unroll
                for (int i = 0; i < 8; ++i) acc[r][t] += wv[i] * xv[t][i];
        }
    }
}

// out[t, o] = W[o, :] . x[t, :] (+ bias[o]) for t < n_tok <= TM; W rows of row_stride bytes.
// Each lane loads two units (of every row of its group) before using either, so twice the
// bytes are in flight per lane.
template <uint32_t TypeId, int TM>
__global__ void __launch_bounds__(kMvThreads)
    k_matvec(const uint8_t* w, int64_t n_in, int64_t row_stride, int64_t n_out, const float* x,
             int n_tok, const float* bias, float* out) {
    constexpr DType T = DType(TypeId);  // a number: see type_id() (hip_packed.h)
    using B = Blocks<T>;
    const int lane = int(threadIdx.x) % kLaneGroup;
    const int64_t row0 =
        (int64_t(blockIdx.x) * (kMvThreads / kLaneGroup) + threadIdx.x / kLaneGroup) * kMvRows;
    // Rows past the end read the last row (valid memory) and are not written: every lane of the
    // group keeps running to the shuffles.
    const uint8_t* rows[kMvRows];
#pragma unroll
    for (int r = 0; r < kMvRows; ++r)
        rows[r] = w + (row0 + r < n_out ? row0 + r : n_out - 1) * row_stride;
    float acc[kMvRows][TM];
#pragma unroll
    for (int r = 0; r < kMvRows; ++r)
#pragma unroll
        for (int t = 0; t < TM; ++t) acc[r][t] = 0.0f;
    const int64_t n_units = n_in / B::kWeights;
    for (int64_t u = lane; u < n_units; u += 2 * kLaneGroup) {
        const int64_t u2 = u + kLaneGroup;
        const bool second = u2 < n_units;
        typename B::Raw raw[2][kMvRows];
#pragma unroll
        for (int r = 0; r < kMvRows; ++r) {
            B::load(rows[r], u, raw[0][r]);
            B::load(rows[r], second ? u2 : u, raw[1][r]);
        }
        matvec_unit<T, TM>(raw[0], u, x, n_in, n_tok, acc);
        if (second) matvec_unit<T, TM>(raw[1], u2, x, n_in, n_tok, acc);
    }
#pragma unroll
    for (int r = 0; r < kMvRows; ++r)
#pragma unroll
        for (int t = 0; t < TM; ++t) {
            const float v = group_sum(acc[r][t]);
            if (lane == 0 && row0 + r < n_out && t < n_tok)
                out[int64_t(t) * n_out + row0 + r] = v + (bias ? bias[row0 + r] : 0.0f);
        }
}

constexpr int kTileTok = 64, kTileOut = 64, kTileK = 64, kTiledThreads = 256;

// grid (ceil(n_out / 64), ceil(n_tok / 64), splits); block 256 = 16 x 16 threads, thread (tx, ty)
// owns tokens ty + 16i and outputs tx + 16j (i, j < 4), so shared reads are conflict-free
// broadcasts. Split z sums inputs [z k_split, (z + 1) k_split) into out + z n_tok n_out (one
// split: all of them, plus the bias; several: k_split_sum adds them and the bias).
template <uint32_t TypeId>
__global__ void __launch_bounds__(kTiledThreads)
    k_mat_mul_tiled(const uint8_t* w, int64_t n_in, int64_t row_stride, int64_t n_out,
                    const float* x, int64_t n_tok, const float* bias, float* out, int64_t k_split) {
    constexpr DType T = DType(TypeId);          // a number: see type_id() (hip_packed.h)
    __shared__ float xs[kTileTok][kTileK + 1];  // [token, k]
    __shared__ float ws[kTileOut][kTileK + 1];  // [output, k]
    const int tx = int(threadIdx.x) % 16, ty = int(threadIdx.x) / 16;
    const int64_t o0 = int64_t(blockIdx.x) * kTileOut, t0 = int64_t(blockIdx.y) * kTileTok;
    float acc[4][4];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
    const int64_t k_begin = int64_t(blockIdx.z) * k_split;
    const int64_t k_end = k_begin + k_split < n_in ? k_begin + k_split : n_in;
    out += int64_t(blockIdx.z) * n_tok * n_out;
    for (int64_t k0 = k_begin; k0 < k_end; k0 += kTileK) {
        // Activation tile: 64 tokens x 16 float4; tokens past the end are zero.
        for (int i = int(threadIdx.x); i < kTileTok * kTileK / 4; i += kTiledThreads) {
            const int tt = i / (kTileK / 4), kk = (i % (kTileK / 4)) * 4;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (t0 + tt < n_tok)
                v = *reinterpret_cast<const float4*>(x + (t0 + tt) * n_in + k0 + kk);
            xs[tt][kk] = v.x, xs[tt][kk + 1] = v.y, xs[tt][kk + 2] = v.z, xs[tt][kk + 3] = v.w;
        }
        // Weight tile: 64 rows x 8 pieces of 8 weights; rows past the end repeat the last row
        // (never written out).
        for (int i = int(threadIdx.x); i < kTileOut * (kTileK / 8); i += kTiledThreads) {
            const int oo = i / (kTileK / 8), pp = i % (kTileK / 8);
            const int64_t row = o0 + oo < n_out ? o0 + oo : n_out - 1;
            float wv[8];
            decode8<T>(w + row * row_stride, k0 + 8 * pp, wv);
            for (int j = 0; j < 8; ++j) ws[oo][8 * pp + j] = wv[j];
        }
        __syncthreads();
#pragma unroll 8
        for (int kk = 0; kk < kTileK; ++kk) {
            float a[4], b[4];
            for (int i = 0; i < 4; ++i) a[i] = xs[ty + 16 * i][kk];
            for (int j = 0; j < 4; ++j) b[j] = ws[tx + 16 * j][kk];
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();  // the tiles are rewritten by the next k-step
    }
    for (int i = 0; i < 4; ++i) {
        const int64_t t = t0 + ty + 16 * i;
        if (t >= n_tok) continue;
        for (int j = 0; j < 4; ++j) {
            const int64_t o = o0 + tx + 16 * j;
            if (o < n_out) out[t * n_out + o] = acc[i][j] + (bias ? bias[o] : 0.0f);
        }
    }
}

// out[i] = sum over the splits of parts[z n + i] in split order (+ the bias of i's row).
__global__ void k_split_sum(const float* parts, int splits, int64_t n, int64_t n_out,
                            const float* bias, float* out) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = 0.0f;
    for (int z = 0; z < splits; ++z) v += parts[int64_t(z) * n + i];
    out[i] = v + (bias ? bias[i % n_out] : 0.0f);
}

// How a tiled matmul splits its inputs where its grid is too small for the device (a router's
// 128 rows: 16 blocks at 512 tokens): parts of whole k-steps, at least two a part ({n_in, 1}:
// unsplit, also for decode shapes).
InputSplit tiled_split(int64_t n_in, int64_t n_out, int64_t n_tok) {
    if (n_tok <= kMatvecMaxTokens) return {n_in, 1};
    const int64_t blocks =
        ((n_out + kTileOut - 1) / kTileOut) * ((n_tok + kTileTok - 1) / kTileTok);
    return split_inputs(blocks, n_in, kTileK, n_in / (2 * kTileK));
}

template <DType T, int TM>
void matvec_as(const void* w, int64_t n_in, int64_t row_stride, int64_t n_out, const float* x,
               int64_t n_tok, const float* bias, float* out, hipStream_t s) {
    const auto grid = static_cast<unsigned>((n_out + kMvRowsPerBlock - 1) / kMvRowsPerBlock);
    hipLaunchKernelGGL((k_matvec<type_id(T), TM>), dim3(grid), dim3(kMvThreads), 0, s,
                       static_cast<const uint8_t*>(w), n_in, row_stride, n_out, x, int(n_tok), bias,
                       out);
}

template <DType T>
bool matvec_typed(const void* w, int64_t n_in, int64_t n_out, const float* x, int64_t n_tok,
                  const float* bias, float* out, hipStream_t s) {
    if constexpr (!Blocks<T>::kFast) {
        return false;
    } else {
        using B = Blocks<T>;
        const auto stride =
            static_cast<int64_t>(row_bytes(file_type(T), static_cast<uint64_t>(n_in)));
        // Whole units per row, float4 activation loads, and the load width's alignment.
        if (n_in % B::kWeights != 0 || !aligned(x, 16) || !rows_aligned<T>(w, stride)) return false;
        if (n_tok == 1)
            matvec_as<T, 1>(w, n_in, stride, n_out, x, n_tok, bias, out, s);
        else if (n_tok == 2)
            matvec_as<T, 2>(w, n_in, stride, n_out, x, n_tok, bias, out, s);
        else if (n_tok <= 4)
            matvec_as<T, 4>(w, n_in, stride, n_out, x, n_tok, bias, out, s);
        else
            matvec_as<T, 8>(w, n_in, stride, n_out, x, n_tok, bias, out, s);
        return true;
    }
}

}  // namespace

bool launch_matvec(DType type, const void* w, int64_t n_in, int64_t n_out, const float* x,
                   int64_t n_tok, const float* bias, float* out, hipStream_t s) {
    if (n_tok < 1 || n_tok > kMatvecMaxTokens || n_out < 1 || n_in < 1) return false;
    if ((n_out + kMvRowsPerBlock - 1) / kMvRowsPerBlock > kMaxGridX) return false;
    bool ok = false;
    if (visit_packed(type, [&](auto P) {
            ok = matvec_typed<decltype(P)::value>(w, n_in, n_out, x, n_tok, bias, out, s);
        }))
        return ok;
    switch (type) {
        case DType::F16:
            return matvec_typed<DType::F16>(w, n_in, n_out, x, n_tok, bias, out, s);
        case DType::BF16:
            return matvec_typed<DType::BF16>(w, n_in, n_out, x, n_tok, bias, out, s);
        case DType::Q4_0:
            return matvec_typed<DType::Q4_0>(w, n_in, n_out, x, n_tok, bias, out, s);
        case DType::Q8_0:
            return matvec_typed<DType::Q8_0>(w, n_in, n_out, x, n_tok, bias, out, s);
        case DType::Q4_K:
            return matvec_typed<DType::Q4_K>(w, n_in, n_out, x, n_tok, bias, out, s);
        case DType::Q5_K:
            return matvec_typed<DType::Q5_K>(w, n_in, n_out, x, n_tok, bias, out, s);
        case DType::Q6_K:
            return matvec_typed<DType::Q6_K>(w, n_in, n_out, x, n_tok, bias, out, s);
        default:
            return false;
    }
}

uint64_t mat_mul_split_floats(int64_t n_in, int64_t n_out, int64_t n_tok) {
    return std::max(split_part_floats(tiled_split(n_in, n_out, n_tok), n_tok, n_out),
                    mat_mul_mma_split_floats(n_in, n_out, n_tok));
}

void launch_split_sum(const float* parts, int splits, int64_t n, int64_t n_out, const float* bias,
                      float* out, hipStream_t s) {
    if (n <= 0) return;
    hipLaunchKernelGGL(k_split_sum, dim3(static_cast<unsigned>((n + 255) / 256)), dim3(256), 0, s,
                       parts, splits, n, n_out, bias, out);
}

bool launch_mat_mul_tiled(DType type, const void* w, int64_t n_in, int64_t n_out, const float* x,
                          int64_t n_tok, const float* bias, float* out, hipStream_t s,
                          float* split_scratch, uint64_t split_floats) {
    if (n_tok < 1 || n_out < 1 || n_in < 1 || n_in % kTileK != 0 || !aligned(x, 16)) return false;
    const int64_t gx = (n_out + kTileOut - 1) / kTileOut, gy = (n_tok + kTileTok - 1) / kTileTok;
    if (gx > kMaxGridX || gy > kMaxGridY) return false;
    const auto stride =
        static_cast<int64_t>(row_bytes(file_type(type), static_cast<uint64_t>(n_in)));
    // Split the inputs where the grid is small and the caller gave the room for the parts.
    const InputSplit plan = tiled_split(n_in, n_out, n_tok);
    const uint64_t parts = split_part_floats(plan, n_tok, n_out);
    const bool split = parts > 0 && split_scratch && parts <= split_floats;
    const int64_t k_split = split ? plan.k_split : n_in, splits = split ? plan.splits : 1;
    const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                    static_cast<unsigned>(splits)),
        block(kTiledThreads);
    const auto* wb = static_cast<const uint8_t*>(w);
    bool ok = false;
    visit_weight_layout(type, [&](auto P) {
        constexpr DType T = decltype(P)::value;
        if (!rows_aligned<T>(w, stride)) return;
        hipLaunchKernelGGL(k_mat_mul_tiled<type_id(T)>, grid, block, 0, s, wb, n_in, stride, n_out,
                           x, n_tok, split ? nullptr : bias, split ? split_scratch : out, k_split);
        ok = true;
    });
    if (ok && split)
        launch_split_sum(split_scratch, int(splits), n_tok * n_out, n_out, bias, out, s);
    return ok;
}

}  // namespace tandem::hip
