// Encoding rules beyond the plain-text vectors: BOS/EOS, special-token parsing on and off, the
// SentencePiece space prefix after special tokens, decode, broken UTF-8 and empty text. Expected
// ids come from the fixture vectors (Hugging Face's output) wherever a rule composes them.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "fixture_tokenizers.h"
#include "fixtures.h"
#include "tandem/common/error.h"
#include "vector_files.h"

namespace {

using tandem::tokenizer::Tokenizer;

// The reference ids of one fixture string.
std::vector<int32_t> reference_ids(const std::string& inp_relative, const std::string& text) {
    const auto inp = tandem::test::fixture(inp_relative);
    if (!inp) return {};
    for (const auto& c : tandem::test::read_tokenizer_cases(*inp))
        if (c.text == text) return c.ids;
    ADD_FAILURE() << "no case '" << text << "' in " << inp_relative;
    return {};
}

std::vector<int32_t> concat(std::vector<std::vector<int32_t>> parts) {
    std::vector<int32_t> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

const char* kSpmInp = "tokenizer/gguf-vocab/ggml-vocab-llama-spm.gguf.inp";
const char* kQwenInp = "tokenizer/hf-qwen2/ggml-vocab-qwen2.gguf.inp";

TEST(EncodeSpecial, SpmBosAndSpecialTokenText) {
    const auto tok = tandem::test::load_fixture_tokenizer("llama-spm");
    if (!tok) GTEST_SKIP() << "fixture not found: llama-spm";
    const auto hello = reference_ids(kSpmInp, "Hello world");  // with the space prefix
    ASSERT_FALSE(hello.empty());
    EXPECT_EQ(tok->encode("Hello world", /*add_special=*/true), concat({{1}, hello}));
    EXPECT_EQ(tok->encode("Hello world", false), hello);
    // "<s>" parsed: the BOS id, and the text after it gets the space prefix again (llama.cpp).
    EXPECT_EQ(tok->encode("<s>Hello world", false, /*parse_special=*/true), concat({{1}, hello}));
    // Not parsed: "<s>" is text, so no id 1 appears.
    const auto plain = tok->encode("<s>Hello world", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
    EXPECT_EQ(tok->decode(plain), "<s>Hello world");
    EXPECT_EQ(tok->encode("", true), std::vector<int32_t>{1});
    EXPECT_TRUE(tok->encode("", false).empty());
}

TEST(EncodeSpecial, Qwen2ImEndParsedOnlyWhenAsked) {
    const auto tok = tandem::test::load_fixture_tokenizer("hf-qwen2");
    if (!tok) GTEST_SKIP() << "fixture not found: hf-qwen2";
    const auto hello = reference_ids(kQwenInp, "Hello");
    const auto space_hello = reference_ids(kQwenInp, " Hello");
    ASSERT_FALSE(hello.empty());
    ASSERT_FALSE(space_hello.empty());
    EXPECT_EQ(tok->encode("Hello<|im_end|> Hello", false, true),
              concat({hello, {151645}, space_hello}));
    const auto plain = tok->encode("Hello<|im_end|> Hello", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 151645), 0);
    EXPECT_EQ(tok->decode(plain), "Hello<|im_end|> Hello");
    EXPECT_EQ(tok->decode(concat({hello, {151645}})), "Hello");
    EXPECT_EQ(tok->decode(concat({hello, {151645}}), true), "Hello<|im_end|>");
    // Qwen2 adds no BOS (bos_token null); add_special changes nothing.
    EXPECT_EQ(tok->encode("Hello", true), hello);
}

TEST(Decode, SpecialRenderingAndSpacePrefix) {
    const auto tok = tandem::test::load_fixture_tokenizer("llama-spm");
    if (!tok) GTEST_SKIP() << "fixture not found: llama-spm";
    const auto ids = tok->encode("Hello world", true);  // [1, ▁Hello, ▁world]
    EXPECT_EQ(tok->decode(ids), "Hello world");
    EXPECT_EQ(tok->decode(ids, /*render_special=*/true), "<s> Hello world");  // as HF decodes
    EXPECT_EQ(tok->token_to_piece(ids[1]), " Hello");
    EXPECT_EQ(tok->token_to_piece(13), "\n");  // <0x0A>
    EXPECT_THROW(tok->token_to_piece(32000), tandem::Error);
    EXPECT_THROW(tok->decode(std::vector<int32_t>{-1}), tandem::Error);
}

// Byte-level BPE is lossless on any bytes; SentencePiece with byte fallback too, except that a
// literal U+2581 in the text reads back as a space (it is the vocabulary's space). One exception:
// DeepSeek-Coder's base vocabulary lacks the letters of the bytes that never occur in UTF-8
// (C0, C1, F5-FF) and has them as added tokens, which decode as the letters ("ø" for F8).
TEST(EncodeBytes, RandomBytesRoundTrip) {
    std::mt19937 rng(1234);
    for (const char* name : {"gpt-2", "hf-llama3", "deepseek-coder", "llama-spm"}) {
        const auto tok = tandem::test::load_fixture_tokenizer(name);
        if (!tok) continue;
        std::vector<int> lossy;
        for (int b = 0; b < 256; ++b) {
            const std::string one(1, char(b));
            if (tok->decode(tok->encode(one, false)) != one) lossy.push_back(b);
        }
        std::vector<int> expected_lossy;
        if (std::string(name) == "deepseek-coder") {
            expected_lossy = {0xC0, 0xC1};
            for (int b = 0xF5; b <= 0xFF; ++b) expected_lossy.push_back(b);
        }
        EXPECT_EQ(lossy, expected_lossy) << name;
        for (int i = 0; i < 200; ++i) {
            std::string text(rng() % 40, '\0');
            for (char& c : text) {
                do {
                    c = char(rng() % 4 == 0 ? rng() % 256 : 32 + rng() % 96);
                } while (std::count(lossy.begin(), lossy.end(), uint8_t(c)));
            }
            if (text.find("\xE2\x96\x81") != std::string::npos) continue;
            const auto ids = tok->encode(text, false, false);
            ASSERT_EQ(tok->decode(ids), text) << name << " case " << i;
        }
    }
}

TEST(EncodeBytes, InvalidUtf8KeepsItsBytes) {
    const auto tok = tandem::test::load_fixture_tokenizer("gpt-2");
    if (!tok) GTEST_SKIP() << "fixture not found: gpt-2";
    const std::string text = "caf\xC3 ok \xFF\xFE\xE2\x82 end\xF0\x9F";
    const auto ids = tok->encode(text, false);
    EXPECT_EQ(tok->decode(ids), text);
    // Each broken byte is a token of its own byte (GPT-2 has all 256), never U+FFFD's bytes.
    const auto ff = tok->encode("\xFF", false);
    ASSERT_EQ(ff.size(), 1u);
    EXPECT_EQ(tok->token_to_piece(ff[0]), "\xFF");
}

}  // namespace
