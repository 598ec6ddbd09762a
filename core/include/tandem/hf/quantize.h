#pragma once
// Quantising a model: F32/F16/BF16 GGUF (or a Hugging Face folder, through convert) to a llama.cpp
// file type with llama.cpp's per-tensor type mix (which tensors stay f32, which get more bits,
// fallbacks for rows that are not a multiple of the block size), so a Q4_K_M file made here has
// the same tensor types as one made by llama-quantize, and for the types both implement the same
// bytes. Streaming: one tensor's output plus a bounded slab of its input in memory at a time;
// rows are quantised on several threads. The output appears only complete (written to a
// temporary file, renamed at the end); any error leaves no output file.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/common/dtype.h"

namespace tandem::hf {

// llama.cpp's file types (LLAMA_FTYPE_MOSTLY_*) that we produce.
enum class QuantScheme { Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K };

// "q4_k_m" / "Q4_K_M" ... ; nullopt when unknown.
std::optional<QuantScheme> quant_scheme_from_name(std::string_view name);
std::string_view quant_scheme_name(QuantScheme s);  // "Q4_K_M"
std::string quant_scheme_names();                   // "q8_0, q4_0, q4_k_m, q5_k_m, q6_k"
uint32_t file_type_of(QuantScheme s);               // general.file_type: 7, 2, 15, 17, 18
DType base_type(QuantScheme s);                     // the type most matrices get: Q4_K for Q4_K_M

// What the mix rules need to know about the model (from GGUF metadata or config.json).
struct MixFacts {
    std::string arch;  // general.architecture
    int64_t n_layer = 0;
    int64_t n_expert = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;
};

struct TensorDesc {
    std::string name;
    DType type = DType::F32;      // type in the input
    std::vector<uint64_t> shape;  // ggml order
};

struct TypeChoice {
    DType type = DType::F32;
    bool quantized = false;  // false: kept as it is in the input (norms, biases, 1-D, ...)
    bool fallback = false;   // the row length did not fit the block size of the mix's choice
};

// llama-quantize's choice for every tensor (same order as `tensors`). Throws for a tensor whose
// layer cannot be read where the rules need it (MoE).
std::vector<TypeChoice> plan_quant_types(const std::vector<TensorDesc>& tensors, QuantScheme s,
                                         const MixFacts& facts);

struct QuantizeProgress {
    size_t tensor_index = 0;  // 0-based, of n_tensors
    size_t n_tensors = 0;
    std::string tensor;       // name of the tensor being written
    uint64_t bytes_done = 0;  // input bytes processed so far (all tensors)
    uint64_t bytes_total = 0;
};
using QuantizeProgressFn = std::function<void(const QuantizeProgress&)>;

struct QuantizeOptions {
    QuantScheme scheme = QuantScheme::Q4_K_M;
    int threads = 0;   // 0: hardware threads
    std::string name;  // general.name override ("" keeps the input's)
    QuantizeProgressFn progress;
};

struct QuantizeResult {
    size_t n_tensors = 0;
    size_t n_quantized = 0;
    size_t n_fallback = 0;
    uint64_t bytes_in = 0;        // tensor data of the input
    uint64_t bytes_out = 0;       // tensor data of the output
    std::map<DType, size_t> mix;  // tensors per output type
};

// GGUF (F32/F16/BF16 tensors; quantized tensors only where they would be kept) -> GGUF.
QuantizeResult quantize_gguf(const std::filesystem::path& src, const std::filesystem::path& out,
                             const QuantizeOptions& options);

// Rows [n_rows, n_per_row] of f32 -> dst (n_rows * row_bytes(t, n_per_row) bytes) on `threads`
// threads (0: hardware threads). Checks every value is finite and every stored scale is finite;
// throws tandem::Error naming `what` and the row otherwise.
void quantize_rows(DType t, const float* src, int64_t n_rows, int64_t n_per_row, uint8_t* dst,
                   int threads, const std::string& what);

}  // namespace tandem::hf
