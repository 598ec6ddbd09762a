// Bad vocabularies and folders give a tandem::Error that names the file and the field.
#include <gtest/gtest.h>

#include <fstream>

#include "fixtures.h"
#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"
#include "tandem/tokenizer/tokenizer.h"

namespace {

using namespace tandem::tokenizer;

template <typename F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const tandem::Error& e) {
        return e.what();
    }
    return "(no error)";
}

void write(const std::filesystem::path& p, const std::string& text) {
    std::ofstream(p) << text;
}

TEST(VocabErrors, UnknownPreTokenizer) {
    Vocab v;
    v.pre = "no-such-pre";
    v.tokens = {"a", "b", "ab"};
    v.merges = {"a b"};
    EXPECT_NE(error_of([&] { Tokenizer t(v); }).find("no-such-pre"), std::string::npos);
}

TEST(VocabErrors, MalformedMergeAndEmptyVocab) {
    Vocab v;
    v.pre = "gpt-2";
    v.tokens = {"a", "b"};
    v.merges = {"ab"};
    EXPECT_NE(error_of([&] { Tokenizer t(v); }).find("merge 0 'ab'"), std::string::npos);
    EXPECT_NE(error_of([] { Tokenizer t(Vocab{}); }).find("no tokens"), std::string::npos);
}

TEST(VocabErrors, HfFolders) {
    const auto dir = tandem::test::temp_dir("tok-errors");
    EXPECT_NE(error_of([&] { load_hf_vocab(dir); }).find("no tokenizer.json"), std::string::npos);
    EXPECT_FALSE(has_hf_vocab(dir));
    write(dir / "vocab.json", "{\"a\": 0, \"b\": ");
    write(dir / "merges.txt", "a b\n");
    const std::string e = error_of([&] { load_hf_vocab(dir); });
    EXPECT_NE(e.find("vocab.json"), std::string::npos) << e;
    EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
    write(dir / "vocab.json", "{\"a\": 0, \"b\": \"one\"}");
    EXPECT_NE(error_of([&] { load_hf_vocab(dir); }).find("token 'b' has no valid id"),
              std::string::npos);
    // A vocabulary of no known family and no tokenizer.json: the pre-tokenizer must be named.
    write(dir / "vocab.json", "{\"a\": 0, \"b\": 1, \"ab\": 2}");
    EXPECT_NE(error_of([&] { load_hf_vocab(dir); }).find("cannot tell the pre-tokenizer"),
              std::string::npos);
    EXPECT_EQ(load_hf_vocab(dir, "gpt-2").tokens.size(), 3u);
    write(dir / "tokenizer_config.json", "{\"eos_token\": \"</s>\"}");
    EXPECT_NE(error_of([&] { load_hf_vocab(dir, "gpt-2"); }).find("eos_token '</s>'"),
              std::string::npos);
}

// Fields of the wrong JSON type: an Error naming the file, never a JSON library exception.
TEST(VocabErrors, MistypedJsonFields) {
    const auto dir = tandem::test::temp_dir("tok-json-types");
    write(
        dir / "tokenizer.json",
        R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", 7]]}})");
    std::string e = error_of([&] { load_hf_vocab(dir); });
    EXPECT_NE(e.find("tokenizer.json: unexpected content"), std::string::npos) << e;
    write(dir / "tokenizer.json",
          R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
              "pre_tokenizer": {"type": "ByteLevel"},
              "added_tokens": [{"id": "one", "content": "<s>"}]})");
    e = error_of([&] { load_hf_vocab(dir); });
    EXPECT_NE(e.find("tokenizer.json: unexpected content"), std::string::npos) << e;
    write(dir / "tokenizer.json", R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}})");
    e = error_of([&] { load_hf_vocab(dir); });
    EXPECT_NE(e.find("model type 'Unigram' is not supported"), std::string::npos) << e;
    write(dir / "tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})");
    e = error_of([&] { load_hf_vocab(dir); });
    EXPECT_NE(e.find("tokenizer.json: byte-level BPE without a pre-tokenizer"), std::string::npos)
        << e;
    std::filesystem::remove(dir / "tokenizer.json");
    write(dir / "vocab.json", "{\"a\": 0, \"b\": 1, \"ab\": 2}");
    write(dir / "merges.txt", "a b\n");
    write(dir / "tokenizer_config.json",
          R"({"added_tokens_decoder": {"3": {"content": "<x>", "special": "yes"}}})");
    e = error_of([&] { load_hf_vocab(dir, "gpt-2"); });
    EXPECT_NE(e.find("tokenizer_config.json: unexpected content"), std::string::npos) << e;
}

TEST(VocabErrors, GgufMissingAndMistypedKeys) {
    const auto dir = tandem::test::temp_dir("tok-gguf-errors");
    {
        tandem::gguf::Writer w;
        w.set("tokenizer.ggml.model", tandem::gguf::Value::string("gpt2"));
        w.write(dir / "no-tokens.gguf");
    }
    std::string e = error_of([&] { load_vocab(tandem::gguf::File::open(dir / "no-tokens.gguf")); });
    EXPECT_NE(e.find("tokenizer.ggml.tokens"), std::string::npos) << e;
    EXPECT_NE(e.find("no-tokens.gguf"), std::string::npos) << e;
    {
        tandem::gguf::Writer w;
        w.set("tokenizer.ggml.model", tandem::gguf::Value::string("llama"));
        w.set("tokenizer.ggml.tokens", tandem::gguf::Value::array(tandem::gguf::ValueType::Int32,
                                                                  {tandem::gguf::Value::i32(1)}));
        w.write(dir / "int-tokens.gguf");
    }
    e = error_of([&] { load_vocab(tandem::gguf::File::open(dir / "int-tokens.gguf")); });
    EXPECT_NE(e.find("tokenizer.ggml.tokens is not an array of strings"), std::string::npos) << e;
    {
        tandem::gguf::Writer w;
        w.set("tokenizer.ggml.model", tandem::gguf::Value::string("llama"));
        w.set("tokenizer.ggml.tokens",
              tandem::gguf::Value::array(tandem::gguf::ValueType::String,
                                         {tandem::gguf::Value::string("<unk>")}));
        w.set("tokenizer.ggml.bos_token_id", tandem::gguf::Value::u32(7));
        w.write(dir / "bad-bos.gguf");
    }
    e = error_of([&] { load_vocab(tandem::gguf::File::open(dir / "bad-bos.gguf")); });
    EXPECT_NE(e.find("bos_token_id 7 out of range"), std::string::npos) << e;
    {
        tandem::gguf::Writer w;
        w.set("tokenizer.ggml.model", tandem::gguf::Value::string("bert"));
        w.write(dir / "bert.gguf");
    }
    e = error_of([&] { load_vocab(tandem::gguf::File::open(dir / "bert.gguf")); });
    EXPECT_NE(e.find("'bert' is not supported"), std::string::npos) << e;
    EXPECT_NE(error_of([&] { load_model_vocab(dir / "absent.gguf"); }).find("absent.gguf"),
              std::string::npos);
}

}  // namespace
