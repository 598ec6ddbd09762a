#pragma once
// The tokenizers of the fixture vocabularies, by name: the GGUF files of
// tokenizer/gguf-vocab ("gpt-2", "llama-spm", ...) and the HF folders ("hf-llama3", "hf-qwen2").
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tandem/tokenizer/tokenizer.h"

namespace tandem::test {

// Every fixture vocabulary name, GGUF ones first.
std::vector<std::string> fixture_vocab_names();
// The fixture path of a name (relative to the fixtures root).
std::string fixture_vocab_path(const std::string& name);
// Loads it; nullopt when the fixture is absent.
std::optional<tokenizer::Tokenizer> load_fixture_tokenizer(const std::string& name);

}  // namespace tandem::test
