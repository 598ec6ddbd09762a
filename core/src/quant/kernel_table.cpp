// Run-time choice of the kernel level from the CPU's features (and TANDEM_QUANT_ISA).
#include <cstdlib>
#include <string>

#include "kernels.h"
#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "tandem/common/sysinfo.h"

namespace tandem::quant {

std::string_view isa_name(Isa isa) {
    switch (isa) {
        case Isa::Scalar:
            return "scalar";
        case Isa::Avx2:
            return "avx2";
        case Isa::Avx512:
            return "avx512";
    }
    return "?";
}

bool isa_supported(Isa isa) {
    const auto& f = cpu_features();
    switch (isa) {
        case Isa::Scalar:
            return true;
        case Isa::Avx2:
            return f.avx2 && f.fma && f.f16c;
        case Isa::Avx512:
            return f.avx2 && f.fma && f.f16c && f.avx512f && f.avx512bw && f.avx512vl &&
                   f.avx512vnni;
    }
    return false;
}

Isa default_isa() {
    static const Isa chosen = [] {
        Isa best = Isa::Scalar;
        for (Isa i : {Isa::Avx2, Isa::Avx512})
            if (isa_supported(i)) best = i;
        if (const char* env = std::getenv("TANDEM_QUANT_ISA")) {
            const std::string want = env;
            for (Isa i : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
                if (want != isa_name(i)) continue;
                if (static_cast<int>(i) <= static_cast<int>(best)) return i;
                log_warn("TANDEM_QUANT_ISA=" + want + " is not supported by this CPU; using " +
                         std::string(isa_name(best)));
                return best;
            }
            log_warn("TANDEM_QUANT_ISA=" + want + " is unknown (scalar, avx2, avx512); using " +
                     std::string(isa_name(best)));
        }
        return best;
    }();
    return chosen;
}

bool can_matmul(DType weight) {
    return scalar_kernels(weight) != nullptr;
}

const Kernels& kernels(DType weight, Isa isa) {
    if (!isa_supported(isa))
        throw Error("quant: kernels for " + std::string(isa_name(isa)) +
                    " requested but this CPU lacks it");
    const Kernels* k = nullptr;
    if (isa == Isa::Avx512) k = avx512_kernels(weight);
    if (!k && static_cast<int>(isa) >= static_cast<int>(Isa::Avx2)) k = avx2_kernels(weight);
    if (!k) k = scalar_kernels(weight);
    if (!k)
        throw Error("quant: no CPU matmul kernel for weight type " +
                    std::string(dtype_traits(static_cast<uint32_t>(weight))
                                    ? dtype_name(weight)
                                    : std::string_view("(unknown id)")));
    return *k;
}

}  // namespace tandem::quant
