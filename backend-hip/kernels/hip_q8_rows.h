#pragma once
// One thread's share of the decode matvec over q8 activations (hip_q8_dot.h items): the loop
// the dense matvec kernels (hip_matvec_q8.hip) and the expert FFN's (hip_moe_q8.hip) share.
#include "hip_q8_dot.h"

namespace tandem::hip {

constexpr int kQ8Threads = 128;  // dense matvec block: R output rows (q8_rows_per_block)

// acc[r][t] = this thread's share (items tid, tid + Stride, ...) of row r's dot with token t: an
// item's activations are loaded once per token and meet the R rows' weights.
template <DType T, int TM, int R, int Stride = kQ8Threads, int Unroll = 2>
__device__ inline void rows_dot(const uint8_t* const (&wr)[R], const Act (&x)[TM], int n_in,
                                int tid, float (&acc)[R][TM]) {
    using D = Q8Dot<T>;
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int t = 0; t < TM; ++t) acc[r][t] = 0.0f;
    const int n_items = n_in / D::kWeights * D::kItems;
    // Two items per trip: the second item's loads issue before the first one's dots wait.
#pragma unroll Unroll
    for (int it = tid; it < n_items; it += Stride) {
        const int b = it / D::kItems, k = it % D::kItems;
        typename D::A a[TM];
#pragma unroll
        for (int t = 0; t < TM; ++t) a[t] = D::acts(x[t], b, k);
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const typename D::W w = D::weights(wr[r], b, k);
#pragma unroll
            for (int t = 0; t < TM; ++t) acc[r][t] += D::dot(w, a[t]);
        }
    }
}

}  // namespace tandem::hip
