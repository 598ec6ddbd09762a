// AVX2 + FMA + F16C kernels (x86-64 since Haswell).
#include <bit>
#include <cstdint>
#include <cstring>

#include "blocks.h"
#include "kernels.h"

#if defined(__x86_64__)
// Everything compiled from here on may use AVX2; the headers above are compiled for the baseline.
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include <immintrin.h>

namespace tandem::quant {
namespace avx2 {
namespace {
#define TANDEM_QUANT_VNNI 0
#include "kernels_x86.inc"
#undef TANDEM_QUANT_VNNI

constexpr Isa kIsa = Isa::Avx2;
const Kernels kTable[] = {
    {DType::F32, DType::F32, kIsa, float_dot<F32Weights>, float_tile<F32Weights>},
    {DType::F16, DType::F32, kIsa, float_dot<F16Weights>, float_tile<F16Weights>},
    {DType::BF16, DType::F32, kIsa, float_dot<BF16Weights>, float_tile<BF16Weights>},
    {DType::Q4_0, DType::Q8_0, kIsa, dot_q4_0, dot_q4_0_tile},
    {DType::Q4_1, DType::Q8_1, kIsa, dot_q4_1, dot_q4_1_tile},
    {DType::Q5_0, DType::Q8_0, kIsa, dot_q5_0, dot_q5_0_tile},
    {DType::Q5_1, DType::Q8_1, kIsa, dot_q5_1, dot_q5_1_tile},
    {DType::Q8_0, DType::Q8_0, kIsa, dot_q8_0, dot_q8_0_tile},
    {DType::Q4_K, DType::Q8_K, kIsa, dot_q4_k, dot_q4_k_tile},
    {DType::Q5_K, DType::Q8_K, kIsa, dot_q5_k, dot_q5_k_tile},
    {DType::Q6_K, DType::Q8_K, kIsa, dot_q6_k, dot_q6_k_tile},
};
}  // namespace
}  // namespace avx2

const Kernels* avx2_kernels(DType weight) {
    for (const auto& k : avx2::kTable)
        if (k.type == weight) return &k;
    return nullptr;
}

}  // namespace tandem::quant
#pragma GCC pop_options

#else
namespace tandem::quant {
const Kernels* avx2_kernels(DType) {
    return nullptr;
}
}  // namespace tandem::quant
#endif
