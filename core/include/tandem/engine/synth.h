#pragma once
// Random-weight GGUF files in the exact shapes of real models, for benchmarks and memory
// planning without downloading the real weights. Matrices get the requested type (norms stay
// f32); values are valid (finite scales) but meaningless. No vocabulary is written: the engine
// runs on token ids alone.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tandem/common/dtype.h"

namespace tandem::engine {

// Names --like accepts: llama-3.2-1b, llama-3.1-8b, llama-3.1-70b, qwen3-30b-a3b, and small
// test shapes (tiny-llama, tiny-qwen3moe).
std::vector<std::string> synthetic_model_names();

// Writes the model (streamed tensor by tensor). Throws tandem::Error for an unknown name, a type
// that cannot be quantised, or shapes the type's block size does not divide.
void write_synthetic_model(const std::string& like, DType type, const std::filesystem::path& out,
                           uint64_t seed = 1);

}  // namespace tandem::engine
