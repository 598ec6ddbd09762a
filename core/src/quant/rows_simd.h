#pragma once
// AVX2/F16C row conversions of the plain types (rows_avx2.cpp); rows.cpp picks them when the
// CPU has AVX2 and TANDEM_QUANT_ISA does not ask for scalar.
#include <cstddef>
#include <cstdint>

namespace tandem::quant::avx2 {

void dequant_f16(const void* src, float* y, int64_t n);
void dequant_bf16(const void* src, float* y, int64_t n);
void quant_f16(const float* x, void* dst, int64_t n);
void quant_bf16(const float* x, void* dst, int64_t n);
// acc[i] += w * row[i]
void add_scaled_f16(const void* src, float w, float* acc, int64_t n);
void add_scaled_f32(const void* src, float w, float* acc, int64_t n);
// weighted_rows_sum (quant.h) for F16 / F32 rows.
void weighted_rows_f16(const void* rows, size_t row_stride, int64_t n_rows, const float* w,
                       int64_t w_stride, int n_acc, float* out, int64_t n);
void weighted_rows_f32(const void* rows, size_t row_stride, int64_t n_rows, const float* w,
                       int64_t w_stride, int n_acc, float* out, int64_t n);

}  // namespace tandem::quant::avx2

namespace tandem::quant::avx512 {

// weighted_rows_sum for F16 / F32 rows with n a multiple of 16 (rows_avx512.cpp).
void weighted_rows_f16(const void* rows, size_t row_stride, int64_t n_rows, const float* w,
                       int64_t w_stride, int n_acc, float* out, int64_t n);
void weighted_rows_f32(const void* rows, size_t row_stride, int64_t n_rows, const float* w,
                       int64_t w_stride, int n_acc, float* out, int64_t n);

// exp_shifted_sum (quant.h).
float exp_shifted_sum(float* x, int64_t n, float shift);

}  // namespace tandem::quant::avx512
