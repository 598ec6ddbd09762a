#pragma once
// Internal: each ISA's kernel set. A getter returns nullptr for a type it has no kernel for (the
// table then falls back to a lower level).
#include "tandem/quant/quant.h"

namespace tandem::quant {

const Kernels* scalar_kernels(DType weight);
const Kernels* avx2_kernels(DType weight);
const Kernels* avx512_kernels(DType weight);

// Prefill GEMM (gemm_avx512.cpp): y[t * y_stride + r] for rows [row_begin, row_end) of w and every
// token of x, in panels of kGemmRows rows. nullptr for weight types without one.
using GemmFn = void (*)(const uint8_t* w, size_t w_stride, int64_t n_in, int64_t row_begin,
                        int64_t row_end, const Activations& x, float* y, int64_t y_stride);
GemmFn avx512_gemm(DType weight);

// Decode matvec (gemv_avx512.cpp): y[r] for rows [row_begin, row_end) of w and the one token of
// x, whose block scales and sums Activations::prepare made. nullptr for types without one (and
// with TANDEM_QUANT_GEMV=0, for A/B runs).
using GemvFn = void (*)(const uint8_t* w, size_t w_stride, int64_t n_in, int64_t row_begin,
                        int64_t row_end, const Activations& x, float* y);
GemvFn avx512_gemv(DType weight);

// Tile adaptor for kernels that have no multi-row version: one vec_dot per activation row (the
// weight row stays in L1 between them).
template <float (*Dot)(int64_t, const void*, const void*)>
void tile_by_rows(int64_t n, const void* w, const void* act, size_t stride, int n_act, float* out) {
    for (int j = 0; j < n_act; ++j) out[j] = Dot(n, w, static_cast<const char*>(act) + j * stride);
}

}  // namespace tandem::quant
