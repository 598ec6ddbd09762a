// The expert FFN's prefill matmuls on the matrix units (hip_mma_tile.h): k_moe_lists groups the
// slots by expert and lists each expert's tiles of 64 slots; block (row tile, listed tile, part)
// multiplies that expert's rows by the activation rows of its slots (gathered: the token's x for
// gate and up, the slot's hidden row for down) and writes each slot's output row (down: times
// the slot's route weight; k_moe_slot_sum adds a token's slots). An expert's weights are read
// once per 64 of its slots, not once per 8 as on the int8-dot kernel (hip_moe_q8.hip).
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdint>

#include "hip_decode.h"
#include "hip_mma_tile.h"
#include "hip_moe_q8.h"
#include "hip_ops.h"

namespace tandem::hip {
namespace {

template <uint32_t TypeId>
__global__ void __launch_bounds__(kMmaTileThreads, 2) k_moe_mma(MoeMma m) {
#if TANDEM_MMA_KIND != 0
    constexpr DType T = DType(TypeId);  // a number: see type_id() (hip_packed.h)
    const int j = int(blockIdx.y);
    if (j >= m.tiles[0]) return;  // past the listed tiles: the whole block
    const int e = m.tiles[1 + 2 * j], base = m.offsets[e] + m.tiles[2 + 2 * j];
    const int live = min(kMmaTileToks, m.offsets[e + 1] - base);  // slots in this tile
    const int part = int(blockIdx.z);
    const void* xrow[2];  // f32 rows
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int tok = mma_tile_token(int(threadIdx.x), r);
        const int64_t slot = tok < live ? m.slots[base + tok] : 0;
        xrow[r] = tok < live ? m.x + (m.per_token ? slot / m.k : slot) * m.n_in : nullptr;
    }
    float* out = m.out[part];
    mma_tile<T, 0>(m.w[part] + int64_t(e) * m.rows * m.stride, m.n_in, m.stride, m.rows,
                   int64_t(blockIdx.x) * kMmaTileRows, xrow, [&](int64_t o, int tok, float v) {
                       if (tok >= live) return;
                       const int64_t slot = m.slots[base + tok];
                       out[slot * m.rows + o] = m.weighted ? v * m.route[2 * slot + 1] : v;
                   });
#endif
}

}  // namespace

bool launch_moe_mma(DType kind, const MoeMma& m, int parts, int64_t max_tiles, hipStream_t s) {
    const DType type = file_type(kind);
    if (!mma_matmul_takes(type) || m.n_in < 32 || m.n_in % 32 != 0 || !aligned(m.x, 16) ||
        max_tiles < 1 || max_tiles > kMaxGridY)
        return false;
    const dim3 grid(static_cast<unsigned>((m.rows + kMmaTileRows - 1) / kMmaTileRows),
                    static_cast<unsigned>(max_tiles), static_cast<unsigned>(parts));
    bool ok = false;
    visit_weight_layout(kind, [&](auto P) {
        constexpr DType T = decltype(P)::value;
        if constexpr (T != DType::F32 && T != DType::BF16) {
            for (int p = 0; p < parts; ++p)
                if (!rows_aligned<T>(m.w[p], m.stride)) return;
            hipLaunchKernelGGL(k_moe_mma<type_id(T)>, grid, dim3(kMmaTileThreads), 0, s, m);
            ok = true;
        }
    });
    return ok;
}

}  // namespace tandem::hip
