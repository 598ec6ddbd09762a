#pragma once
// One thread's share of the decode matvec over q8 activations (hip_q8_dot.h items), the types
// it reads and their alignment: what the dense matvec kernels (hip_matvec_q8.hip) and the
// expert FFN's (hip_moe_q8.hip) share.
#include <type_traits>

#include "hip_q8_dot.h"

namespace tandem::hip {

constexpr int kQ8Threads = 128;  // dense matvec block: R output rows (q8_rows_per_block)

// acc[r][t] = this thread's share (items tid, tid + Stride, ...) of row r's dot with token t: an
// item's activations are loaded once per token and meet the R rows' weights. D: the items
// (hip_q8_dot.h; the experts' are Q8ExpertDot's).
template <DType T, int TM, int R, int Stride = kQ8Threads, int Unroll = 2, class D = Q8Dot<T>>
__device__ inline void rows_dot(const uint8_t* const (&wr)[R], const Act (&x)[TM], int n_in,
                                int tid, float (&acc)[R][TM]) {
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

// Q4_K / Q5_K, whose items are 64 weights (hip_q8_dot.h).
constexpr bool is_k45(DType t) {
    return file_type(t) == DType::Q4_K || file_type(t) == DType::Q5_K;
}
// Items a trip of the plain matvec: Q4_K / Q5_K's 64-weight items one at a time from 4 tokens
// on, where two spill more (nvcc's -Xptxas -v, 4 rows of 8 tokens: Q4_K 292-504 bytes against
// 4-128 at one, Q5_K 284-336 against 204-312).
template <DType T, int TM>
constexpr int kQ8ItemsATrip = is_k45(T) && TM >= 4 ? 1 : 2;

// Whether rows of n_in weights of type T starting at w suit the items' loads (their alignment).
template <DType T>
bool q8_rows_aligned(const void* w, int64_t n_in) {
    constexpr int64_t a = Q8Dot<T>::kAlign;
    const auto stride = static_cast<int64_t>(row_bytes(file_type(T), static_cast<uint64_t>(n_in)));
    return stride % a == 0 && reinterpret_cast<uintptr_t>(w) % a == 0;
}

// f(std::integral_constant<DType, T>{}) for the weight types the q8 matvec reads (the file
// types and the repacked ones); false (f not called) for any other, whose launch then enqueues
// nothing.
template <class F>
bool visit_q8_type(DType type, F&& f) {
    if (visit_packed(type, f)) return true;
    switch (type) {
        case DType::Q4_0:
            f(std::integral_constant<DType, DType::Q4_0>{});
            return true;
        case DType::Q8_0:
            f(std::integral_constant<DType, DType::Q8_0>{});
            return true;
        case DType::Q4_K:
            f(std::integral_constant<DType, DType::Q4_K>{});
            return true;
        case DType::Q5_K:
            f(std::integral_constant<DType, DType::Q5_K>{});
            return true;
        case DType::Q6_K:
            f(std::integral_constant<DType, DType::Q6_K>{});
            return true;
        default:
            return false;
    }
}

}  // namespace tandem::hip
