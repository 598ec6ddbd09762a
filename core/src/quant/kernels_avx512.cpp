// AVX-512 (F, BW, VL, VNNI) kernels: 512-bit versions of the hot types (kernels_x86_512.inc),
// the 256-bit set with VNNI dot products for the rest.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "blocks.h"
#include "kernels.h"

#if defined(__x86_64__)
#include "target_avx512_begin.inc"

namespace tandem::quant {
namespace avx512 {
namespace {
#define TANDEM_QUANT_VNNI 1
#include "kernels_x86.inc"
#include "kernels_x86_512.inc"
#undef TANDEM_QUANT_VNNI

constexpr Isa kIsa = Isa::Avx512;
const Kernels kTable[] = {
    TANDEM_ENTRY(F32, F32, F32K512),     TANDEM_ENTRY(F16, F32, F16K512),
    TANDEM_ENTRY(BF16, F32, BF16K512),   TANDEM_ENTRY(Q4_0, Q8_0, Q4_0K),
    TANDEM_ENTRY(Q4_1, Q8_1, Q4_1K),     TANDEM_ENTRY(Q5_0, Q8_0, Q5_0K),
    TANDEM_ENTRY(Q5_1, Q8_1, Q5_1K),     TANDEM_ENTRY(Q8_0, Q8_0, Q8_0K),
    TANDEM_ENTRY(Q4_K, Q8_K, Q4_KK512),  TANDEM_ENTRY(Q5_K, Q8_K, Q5_KK512),
    TANDEM_ENTRY(Q6_K, Q8_K, Q6_KK512),  TANDEM_ENTRY(Q2_K, Q8_K, Q2_KK),
    TANDEM_ENTRY(Q3_K, Q8_K, Q3_KK),     TANDEM_ENTRY(IQ4_NL, Q8_0, IQ4_NLK),
    TANDEM_ENTRY(IQ4_XS, Q8_K, IQ4_XSK),
};
}  // namespace
}  // namespace avx512

const Kernels* avx512_kernels(DType weight) {
    for (const auto& k : avx512::kTable)
        if (k.type == weight) return &k;
    return nullptr;
}

}  // namespace tandem::quant
#include "target_avx512_end.inc"

#else
namespace tandem::quant {
const Kernels* avx512_kernels(DType) {
    return nullptr;
}
}  // namespace tandem::quant
#endif
