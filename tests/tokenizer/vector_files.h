#pragma once
// Reads llama.cpp's tokenizer test vectors: NAME.inp (strings, each followed by
// "\n__ggml_vocab_test__\n") and NAME.out (one line of space-separated ids per string).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tandem::test {

struct TokenizerCase {
    std::string text;
    std::vector<int32_t> ids;
};

// Throws std::runtime_error when the files cannot be read or disagree in count.
std::vector<TokenizerCase> read_tokenizer_cases(const std::filesystem::path& inp);

std::string read_file(const std::filesystem::path& path);

}  // namespace tandem::test
