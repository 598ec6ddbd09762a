// AVX2 + FMA + F16C kernels (x86-64 since Haswell).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "blocks.h"
#include "kernels.h"

#if defined(__x86_64__)
#include "target_avx2_begin.inc"

namespace tandem::quant {
namespace avx2 {
namespace {
#define TANDEM_QUANT_VNNI 0
#include "kernels_x86.inc"
#undef TANDEM_QUANT_VNNI

constexpr Isa kIsa = Isa::Avx2;
const Kernels kTable[] = {
    TANDEM_ENTRY(F32, F32, F32K),        TANDEM_ENTRY(F16, F32, F16K),
    TANDEM_ENTRY(BF16, F32, BF16K),      TANDEM_ENTRY(Q4_0, Q8_0, Q4_0K),
    TANDEM_ENTRY(Q4_1, Q8_1, Q4_1K),     TANDEM_ENTRY(Q5_0, Q8_0, Q5_0K),
    TANDEM_ENTRY(Q5_1, Q8_1, Q5_1K),     TANDEM_ENTRY(Q8_0, Q8_0, Q8_0K),
    TANDEM_ENTRY(Q4_K, Q8_K, Q4_KK),     TANDEM_ENTRY(Q5_K, Q8_K, Q5_KK),
    TANDEM_ENTRY(Q6_K, Q8_K, Q6_KK),     TANDEM_ENTRY(Q2_K, Q8_K, Q2_KK),
    TANDEM_ENTRY(Q3_K, Q8_K, Q3_KK),     TANDEM_ENTRY(IQ4_NL, Q8_0, IQ4_NLK),
    TANDEM_ENTRY(IQ4_XS, Q8_K, IQ4_XSK),
};
}  // namespace
}  // namespace avx2

const Kernels* avx2_kernels(DType weight) {
    for (const auto& k : avx2::kTable)
        if (k.type == weight) return &k;
    return nullptr;
}

}  // namespace tandem::quant
#include "target_end.inc"

#else
namespace tandem::quant {
const Kernels* avx2_kernels(DType) {
    return nullptr;
}
}  // namespace tandem::quant
#endif
