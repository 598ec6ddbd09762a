#pragma once
// Hugging Face folder (config.json + safetensors) or GGUF file -> GGUF, following llama.cpp's
// convert_hf_to_gguf.py conventions: architecture names, metadata keys, tensor names, the Q/K row
// permutation of llama-type models, Gemma's RMSNorm weights stored as (1 + w), tied embeddings
// without an output tensor, 1-D and norm tensors kept in f32. Streams one tensor at a time.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tandem/common/dtype.h"
#include "tandem/hf/config.h"
#include "tandem/hf/quantize.h"

namespace tandem::hf {

struct ConvertOptions {
    DType type = DType::F16;  // F32, F16 or BF16 for the matrices
    std::string name;         // general.name; the source folder's name when empty
    // Set: quantize straight from the HF weights with llama.cpp's mix for this file type (type
    // is then ignored); the result equals convert to f32 + quantize_gguf.
    std::optional<QuantScheme> quant;
    int threads = 0;  // quantizing threads (0: hardware threads)
    QuantizeProgressFn progress;
};

struct ConvertResult {
    std::string arch;
    size_t n_tensors = 0;
    bool vocab_written = false;
    std::string vocab_note;  // why no vocabulary was written, when none was
};

// llama.cpp's general.file_type for an output type (ALL_F32 0, MOSTLY_F16 1, MOSTLY_BF16 32).
uint32_t file_type_of(DType t);

// The type a tensor gets in the output: f32 for 1-D tensors, *_norm.weight, biases and the MoE
// router (ffn_gate_inp), `type` for the rest.
DType output_type(const std::string& gguf_name, size_t n_dims, DType type);

ConvertResult convert_hf(const std::filesystem::path& folder, const std::filesystem::path& out,
                         const ConvertOptions& options);
// Re-types a GGUF file's tensors (dequantizing where needed), metadata kept.
ConvertResult convert_gguf(const std::filesystem::path& src, const std::filesystem::path& out,
                           const ConvertOptions& options);
// Either of the above, by what `src` is.
ConvertResult convert(const std::filesystem::path& src, const std::filesystem::path& out,
                      const ConvertOptions& options);

// One output tensor of an HF conversion: its GGUF name and shape, and how it is made.
struct TensorPlan {
    enum class Transform { None, PermuteRows, AddOne, Generated };
    std::string name;                  // GGUF name
    std::vector<uint64_t> shape;       // ggml order
    std::vector<std::string> sources;  // HF tensors; several are stacked (MoE experts)
    Transform transform = Transform::None;
    uint64_t permute_heads = 0;    // PermuteRows: head count of the rows
    std::vector<float> generated;  // Generated: the values (rope_freqs)
};

class SafetensorsModel;
// The output tensors of a model, checked against its config. Throws tandem::Error naming an HF
// tensor that has no GGUF name or a shape that disagrees with config.json.
std::vector<TensorPlan> plan_tensors(const ModelConfig& config, const SafetensorsModel& model);

}  // namespace tandem::hf
