// Every tokenizer.ggml.pre name llama.cpp writes for a byte-level BPE family is known here and its
// regexes compile under ICU; pre_tokenize() cuts text into pieces that cover it exactly.
#include <gtest/gtest.h>

#include "tandem/tokenizer/tokenizer.h"

namespace {

using namespace tandem::tokenizer;

Vocab tiny_vocab(const std::string& pre) {
    Vocab v;
    v.pre = pre;
    v.tokens = {"a", "b", "ab"};
    v.merges = {"a b"};
    return v;
}

TEST(PreTokenizerNames, AllCompileAndCoverTheText) {
    const char* names[] = {
        "default",   "llama-bpe",    "llama3",         "dbrx",      "smaug-bpe", "qwen2",
        "stablelm2", "deepseek-llm", "deepseek-coder", "falcon",    "starcoder", "refact",
        "command-r", "smollm",       "codeshell",      "exaone",    "gpt-2",     "mpt",
        "olmo",      "jais",         "phi-2",          "poro-chat", "bloom",     "viking",
        "tekken",    "gpt-4o",       "chatglm-bpe",    "falcon3",   "pixtral",   "deepseek-v3"};
    const std::string text =
        "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～ \n\n  3.14 ÀÖ Ελλάδα\t'RE";
    for (const char* name : names) {
        Tokenizer tok(tiny_vocab(name));
        std::string joined;
        const auto pieces = tok.pre_tokenize(text);
        for (auto p : pieces) {
            EXPECT_FALSE(p.empty()) << name;
            joined += p;
        }
        EXPECT_EQ(joined, text) << name;
        EXPECT_GT(pieces.size(), 10u) << name;
    }
}

// Known cuts: GPT-2 keeps a leading space with the word and splits contractions; Llama 3 groups
// digits by three; Qwen2 splits every digit; DeepSeek-Coder splits newlines apart.
TEST(PreTokenizerNames, ReferenceCuts) {
    const auto cuts = [](const char* pre, const std::string& text) {
        Tokenizer tok(tiny_vocab(pre));
        std::vector<std::string> out;
        for (auto p : tok.pre_tokenize(text)) out.emplace_back(p);
        return out;
    };
    using V = std::vector<std::string>;
    EXPECT_EQ(cuts("gpt-2", "I'll go  now"), (V{"I", "'ll", " go", " ", " now"}));
    EXPECT_EQ(cuts("llama-bpe", "1234567 x"), (V{"123", "456", "7", " x"}));
    EXPECT_EQ(cuts("qwen2", "123"), (V{"1", "2", "3"}));
    EXPECT_EQ(cuts("deepseek-coder", "a\nb"), (V{"a", "\n", "b"}));
    // \s is Unicode White_Space (U+0085 NEXT LINE included), as in Hugging Face's engines.
    EXPECT_EQ(cuts("gpt-2", "a\xC2\x85 b"), (V{"a", "\xC2\x85", " b"}));
}

}  // namespace
