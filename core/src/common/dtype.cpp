#include "tandem/common/dtype.h"

#include <array>
#include <cctype>
#include <string>

namespace tandem {
namespace {

// Block layouts as documented by ggml (ggml-common.h): e.g. Q4_K is 256 elements in 144 bytes
// (f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles).
constexpr std::array kTraits = {
    DTypeTraits{DType::F32, "f32", 1, 4, false},
    DTypeTraits{DType::F16, "f16", 1, 2, false},
    DTypeTraits{DType::Q4_0, "q4_0", 32, 18, true},
    DTypeTraits{DType::Q4_1, "q4_1", 32, 20, true},
    DTypeTraits{DType::Q5_0, "q5_0", 32, 22, true},
    DTypeTraits{DType::Q5_1, "q5_1", 32, 24, true},
    DTypeTraits{DType::Q8_0, "q8_0", 32, 34, true},
    DTypeTraits{DType::Q8_1, "q8_1", 32, 36, true},
    DTypeTraits{DType::Q2_K, "q2_k", 256, 84, true},
    DTypeTraits{DType::Q3_K, "q3_k", 256, 110, true},
    DTypeTraits{DType::Q4_K, "q4_k", 256, 144, true},
    DTypeTraits{DType::Q5_K, "q5_k", 256, 176, true},
    DTypeTraits{DType::Q6_K, "q6_k", 256, 210, true},
    DTypeTraits{DType::Q8_K, "q8_k", 256, 292, true},
    DTypeTraits{DType::IQ2_XXS, "iq2_xxs", 256, 66, true},
    DTypeTraits{DType::IQ2_XS, "iq2_xs", 256, 74, true},
    DTypeTraits{DType::IQ3_XXS, "iq3_xxs", 256, 98, true},
    DTypeTraits{DType::IQ1_S, "iq1_s", 256, 50, true},
    DTypeTraits{DType::IQ4_NL, "iq4_nl", 32, 18, true},
    DTypeTraits{DType::IQ3_S, "iq3_s", 256, 110, true},
    DTypeTraits{DType::IQ2_S, "iq2_s", 256, 82, true},
    DTypeTraits{DType::IQ4_XS, "iq4_xs", 256, 136, true},
    DTypeTraits{DType::I8, "i8", 1, 1, false},
    DTypeTraits{DType::I16, "i16", 1, 2, false},
    DTypeTraits{DType::I32, "i32", 1, 4, false},
    DTypeTraits{DType::I64, "i64", 1, 8, false},
    DTypeTraits{DType::F64, "f64", 1, 8, false},
    DTypeTraits{DType::IQ1_M, "iq1_m", 256, 56, true},
    DTypeTraits{DType::BF16, "bf16", 1, 2, false},
    DTypeTraits{DType::TQ1_0, "tq1_0", 256, 54, true},
    DTypeTraits{DType::TQ2_0, "tq2_0", 256, 66, true},
    DTypeTraits{DType::MXFP4, "mxfp4", 32, 17, true},
};

}  // namespace

std::optional<DTypeTraits> dtype_traits(uint32_t id) {
    for (const auto& t : kTraits)
        if (static_cast<uint32_t>(t.type) == id) return t;
    return std::nullopt;
}

const DTypeTraits& dtype_traits(DType t) {
    for (const auto& tr : kTraits)
        if (tr.type == t) return tr;
    return kTraits[0];  // unreachable for valid enum values
}

std::string_view dtype_name(DType t) { return dtype_traits(t).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
    std::string lower;
    for (char c : name) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    for (const auto& t : kTraits)
        if (t.name == lower) return t.type;
    return std::nullopt;
}

}  // namespace tandem
