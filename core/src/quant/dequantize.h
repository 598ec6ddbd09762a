#pragma once
// Scalar row converters, one per type (n is a multiple of the block size; checked by rows.cpp).
#include <cstdint>

namespace tandem::quant::scalar {

void dequant_f16(const void* src, float* y, int64_t n);
void dequant_bf16(const void* src, float* y, int64_t n);
void dequant_q4_0(const void* src, float* y, int64_t n);
void dequant_q4_1(const void* src, float* y, int64_t n);
void dequant_q5_0(const void* src, float* y, int64_t n);
void dequant_q5_1(const void* src, float* y, int64_t n);
void dequant_q8_0(const void* src, float* y, int64_t n);
void dequant_q2_k(const void* src, float* y, int64_t n);
void dequant_q3_k(const void* src, float* y, int64_t n);
void dequant_q4_k(const void* src, float* y, int64_t n);
void dequant_q5_k(const void* src, float* y, int64_t n);
void dequant_q6_k(const void* src, float* y, int64_t n);
void dequant_q8_k(const void* src, float* y, int64_t n);
void dequant_iq4_nl(const void* src, float* y, int64_t n);
void dequant_iq4_xs(const void* src, float* y, int64_t n);

void quant_f16(const float* x, void* dst, int64_t n);
void quant_bf16(const float* x, void* dst, int64_t n);
void quant_q4_0(const float* x, void* dst, int64_t n);
void quant_q4_1(const float* x, void* dst, int64_t n);
void quant_q5_0(const float* x, void* dst, int64_t n);
void quant_q5_1(const float* x, void* dst, int64_t n);
void quant_q8_0(const float* x, void* dst, int64_t n);
void quant_q8_1(const float* x, void* dst, int64_t n);
void quant_q8_k(const float* x, void* dst, int64_t n);
void quant_q4_k(const float* x, void* dst, int64_t n);
void quant_q5_k(const float* x, void* dst, int64_t n);
void quant_q6_k(const float* x, void* dst, int64_t n);

// Round half to even for |v| < 2^22, exactly as ggml's nearest_int (the quantisers depend on it).
int nearest_int(float v);

}  // namespace tandem::quant::scalar
