#pragma once
// llama.cpp's GGUF metadata keys for a converted HF model.
#include "tandem/gguf/gguf.h"
#include "tandem/hf/config.h"

namespace tandem::hf::detail {

void write_model_metadata(const ModelConfig& c, const std::string& name, uint32_t file_type,
                          gguf::Writer& w);

}  // namespace tandem::hf::detail
