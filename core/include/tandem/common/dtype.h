#pragma once
// Tensor element types. The numeric values are ggml's type ids, as stored in GGUF files, so a
// DType read from a file is used as it is.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tandem {

enum class DType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
};

struct DTypeTraits {
    DType type;
    std::string_view name;    // "q4_k" (lower case, as llama.cpp prints it)
    uint32_t block_elems;     // elements per block (1 for plain types)
    uint32_t block_bytes;     // bytes per block
    bool quantized;
};

// Traits of a known type; nullopt for an id that is not a ggml type (bad file).
std::optional<DTypeTraits> dtype_traits(uint32_t id);
const DTypeTraits& dtype_traits(DType t);  // t must be known
std::string_view dtype_name(DType t);
// Parses "q4_k", "Q4_K", "bf16", ...; nullopt when unknown.
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes of one row of n elements; n must be a multiple of the block size (checked by callers
// that read files, see row_bytes_checked).
inline size_t row_bytes(DType t, uint64_t n) {
    const auto& tr = dtype_traits(t);
    return static_cast<size_t>(n / tr.block_elems * tr.block_bytes);
}

}  // namespace tandem
