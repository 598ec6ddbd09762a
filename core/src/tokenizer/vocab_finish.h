#pragma once
// Checks and completions shared by the GGUF and Hugging Face loaders.
#include <string>

#include "tandem/tokenizer/vocab.h"

namespace tandem::tokenizer {

// Fills types when empty, checks sizes and special ids (source names the file in errors), finds
// end-of-turn tokens by their text when no id was given and collects eog_ids.
void finish_vocab(Vocab& vocab, const std::string& source);

const char* model_kind_name(ModelKind kind);  // "gpt2" / "llama"

}  // namespace tandem::tokenizer
