// avx512 kernels (placeholder until the SIMD versions land).
#include "kernels.h"

namespace tandem::quant {

const Kernels* avx512_kernels(DType) {
    return nullptr;
}

}  // namespace tandem::quant
