#include "fixture_tokenizers.h"

#include "fixtures.h"

namespace tandem::test {

std::vector<std::string> fixture_vocab_names() {
    return {"deepseek-coder", "falcon",    "gpt-2",   "llama-spm", "mpt",
            "phi-3",          "hf-llama3", "hf-qwen2"};
}

std::string fixture_vocab_path(const std::string& name) {
    if (name.starts_with("hf-")) return "tokenizer/" + name;
    return "tokenizer/gguf-vocab/ggml-vocab-" + name + ".gguf";
}

std::optional<tokenizer::Tokenizer> load_fixture_tokenizer(const std::string& name) {
    const auto path = fixture(fixture_vocab_path(name));
    if (!path) return std::nullopt;
    return tokenizer::Tokenizer(tokenizer::load_model_vocab(*path));
}

}  // namespace tandem::test
