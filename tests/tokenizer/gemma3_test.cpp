// Gemma 3's vocabulary (262144 tokens, SentencePiece BPE, no space prefix, whitespace runs as
// user-defined tokens), checked on the app's default model when it is on this machine
// ($TANDEM_GEMMA3_GGUF or /tmp/gemma/gemma-3-270m-q4_k_m.gguf); skipped otherwise, as CI has no
// model files. Expected ids: Google's sentencepiece 0.2.3 on a model proto built from the same
// file's pieces, scores and types (user-defined pieces spelled with U+2581, as in Gemma's
// tokenizer.model), byte fallback on, no dummy prefix.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tandem/tokenizer/tokenizer.h"

namespace {

using namespace tandem::tokenizer;

std::filesystem::path gemma_path() {
    if (const char* env = std::getenv("TANDEM_GEMMA3_GGUF"); env && *env) return env;
    return "/tmp/gemma/gemma-3-270m-q4_k_m.gguf";
}

TEST(Gemma3, EncodesAsSentencePiece) {
    const auto path = gemma_path();
    if (!std::filesystem::exists(path))
        GTEST_SKIP() << "Gemma 3 model not found at " << path << " (set TANDEM_GEMMA3_GGUF)";
    const Tokenizer tok(load_model_vocab(path));
    const Vocab& v = tok.vocab();
    EXPECT_EQ(v.size(), 262144u);
    EXPECT_EQ(v.model, ModelKind::Spm);
    EXPECT_FALSE(v.add_space_prefix);
    EXPECT_EQ(v.bos_id, 2);
    EXPECT_TRUE(v.is_eog(106));  // <end_of_turn>
    const struct {
        const char* text;
        std::vector<int32_t> ids;
    } cases[] = {
        {"Hello world", {9259, 1902}},
        {"Über café 日本語 🦙 emoji",
         {107081, 33443, 33375, 238582, 236743, 478, 397, 404, 391, 64334}},
        {"user\nHi there!", {2364, 107, 10979, 993, 236888}},
        {"  leading spaces and\ttabs\n", {138, 26016, 9952, 532, 255968, 39218, 107}},
        {"fn main() {\n    println!(\"{}\", 42);\n}",
         {15059, 1689, 825, 642, 107, 140, 4629, 183228, 236743, 236812, 236778, 626, 107, 236783}},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(tok.encode(c.text, false), c.ids) << c.text;
        EXPECT_EQ(tok.decode(c.ids), c.text);
    }
    // A chat turn: control tokens parsed, BOS added, the text in between as above.
    EXPECT_EQ(tok.encode("<start_of_turn>user\nHi there!<end_of_turn>", true, true),
              (std::vector<int32_t>{2, 105, 2364, 107, 10979, 993, 236888, 106}));
    EXPECT_EQ(tok.decode(std::vector<int32_t>{2, 105, 2364, 106}, true),
              "<bos><start_of_turn>user<end_of_turn>");
}

}  // namespace
