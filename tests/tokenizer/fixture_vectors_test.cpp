// The tokenizer against llama.cpp's test vectors (produced by Hugging Face tokenizers): every
// string of every vocabulary in ../shared/fixtures/tokenizer must give exactly the expected ids.
// As in llama.cpp's test-tokenizer-0: no BOS/EOS, special tokens not parsed.
#include <gtest/gtest.h>

#include <sstream>

#include "fixtures.h"
#include "tandem/gguf/gguf.h"
#include "tandem/tokenizer/tokenizer.h"
#include "vector_files.h"

namespace {

using tandem::tokenizer::Tokenizer;

std::string ids_text(const std::vector<int32_t>& ids) {
    std::ostringstream s;
    for (int32_t id : ids) s << ' ' << id;
    return s.str();
}

std::string escaped(const std::string& text) {
    std::string out;
    for (unsigned char c : text) {
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else
            out += char(c);
    }
    return out;
}

// Returns the number of cases checked; every mismatch is a test failure naming the string.
size_t check_cases(const Tokenizer& tok, const std::filesystem::path& inp) {
    const auto cases = tandem::test::read_tokenizer_cases(inp);
    EXPECT_GT(cases.size(), 30u) << inp;
    for (const auto& c : cases) {
        const auto ids = tok.encode(c.text, /*add_special=*/false, /*parse_special=*/false);
        EXPECT_EQ(ids_text(ids), ids_text(c.ids))
            << inp.filename() << ": text '" << escaped(c.text) << "'";
    }
    return cases.size();
}

class GgufVocabVectors : public testing::TestWithParam<std::string> {};

TEST_P(GgufVocabVectors, EncodeMatchesReference) {
    const std::string name = "tokenizer/gguf-vocab/ggml-vocab-" + GetParam() + ".gguf";
    TANDEM_FIXTURE_OR_SKIP(path, name);
    const auto file = tandem::gguf::File::open(path);
    const Tokenizer tok(tandem::tokenizer::load_vocab(file));
    std::filesystem::path inp = path;
    inp += ".inp";
    check_cases(tok, inp);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GgufVocabVectors,
                         testing::Values("deepseek-coder", "falcon", "gpt-2", "llama-spm", "mpt",
                                         "phi-3"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n)
                                 if (c == '-') c = '_';
                             return n;
                         });

TEST(HfVocabVectors, Llama3EncoderJsonVocabBpe) {
    TANDEM_FIXTURE_OR_SKIP(dir, "tokenizer/hf-llama3");
    const auto vocab = tandem::tokenizer::load_hf_vocab(dir);
    EXPECT_EQ(vocab.pre, "llama-bpe");
    const Tokenizer tok(vocab);
    check_cases(tok, dir / "ggml-vocab-llama-bpe.gguf.inp");
}

TEST(HfVocabVectors, Qwen2VocabJsonMergesTxt) {
    TANDEM_FIXTURE_OR_SKIP(dir, "tokenizer/hf-qwen2");
    const auto vocab = tandem::tokenizer::load_hf_vocab(dir);
    EXPECT_EQ(vocab.pre, "qwen2");
    const Tokenizer tok(vocab);
    check_cases(tok, dir / "ggml-vocab-qwen2.gguf.inp");
}

}  // namespace
