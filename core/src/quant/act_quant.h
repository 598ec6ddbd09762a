#pragma once
// Activation quantisers (q8_0, q8_1, q8_K): scalar reference versions live in quantize_basic.cpp;
// the AVX2 versions here give the same bytes and are what matmul uses on x86.
#include <cstdint>

namespace tandem::quant::avx2 {

void quant_q8_0(const float* x, void* dst, int64_t n);
void quant_q8_1(const float* x, void* dst, int64_t n);
void quant_q8_k(const float* x, void* dst, int64_t n);

}  // namespace tandem::quant::avx2
