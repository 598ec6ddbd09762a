// write_vocab: a vocabulary written into a GGUF file is read back identically by our reader, the
// file is what the PyPI gguf package (the reference reader) sees with llama.cpp's keys, and the
// re-read vocabulary still passes the fixture vectors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

#include "fixtures.h"
#include "tandem/gguf/gguf.h"
#include "tandem/tokenizer/tokenizer.h"
#include "vector_files.h"

namespace {

using namespace tandem::tokenizer;

void expect_same_vocab(const Vocab& a, const Vocab& b) {
    EXPECT_EQ(a.model, b.model);
    EXPECT_EQ(a.pre, b.pre);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.scores, b.scores);
    EXPECT_EQ(a.types, b.types);
    EXPECT_EQ(a.merges, b.merges);
    EXPECT_EQ(a.bos_id, b.bos_id);
    EXPECT_EQ(a.eos_id, b.eos_id);
    EXPECT_EQ(a.unk_id, b.unk_id);
    EXPECT_EQ(a.pad_id, b.pad_id);
    EXPECT_EQ(a.eot_id, b.eot_id);
    EXPECT_EQ(a.eog_ids, b.eog_ids);
    EXPECT_EQ(a.add_bos, b.add_bos);
    EXPECT_EQ(a.add_eos, b.add_eos);
    EXPECT_EQ(a.add_space_prefix, b.add_space_prefix);
    EXPECT_EQ(a.chat_template, b.chat_template);
}

std::filesystem::path write_gguf(const Vocab& v, const std::string& tag) {
    tandem::gguf::Writer w;
    w.set("general.architecture", tandem::gguf::Value::string("llama"));
    write_vocab(v, w);
    const auto path = tandem::test::temp_dir(tag) / "vocab.gguf";
    w.write(path);
    return path;
}

// The reference reader's view of the file's tokenizer keys, as JSON.
nlohmann::json read_with_pypi_gguf(const std::filesystem::path& gguf_path) {
    const auto script = tandem::test::temp_dir("gguf-py") / "dump.py";
    std::ofstream(script) << R"(import sys, json, gguf
r = gguf.GGUFReader(sys.argv[1])
out = {}
for k, f in r.fields.items():
    if not k.startswith('tokenizer.'):
        continue
    v = f.contents()
    out[k] = v
print(json.dumps(out))
)";
    const std::string cmd =
        tandem::test::python() + " " + script.string() + " " + gguf_path.string();
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return {};
    std::string text;
    char buf[65536];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << cmd;
    return nlohmann::json::parse(text);
}

TEST(WriteVocab, Qwen2FromHfThroughGgufPassesVectors) {
    TANDEM_FIXTURE_OR_SKIP(dir, "tokenizer/hf-qwen2");
    const Vocab original = load_hf_vocab(dir);
    EXPECT_EQ(original.eos_id, 151643);  // <|endoftext|> per tokenizer_config.json
    EXPECT_EQ(original.pad_id, 151643);
    EXPECT_EQ(original.eot_id, 151645);  // <|im_end|>
    EXPECT_EQ(original.type(151644), TokenType::Control);
    EXPECT_NE(original.chat_template.find("template ends here"), std::string::npos);

    const auto path = write_gguf(original, "qwen2-vocab");
    const Vocab reread = load_vocab(tandem::gguf::File::open(path));
    expect_same_vocab(original, reread);

    const Tokenizer tok(reread);
    for (const auto& c : tandem::test::read_tokenizer_cases(dir / "ggml-vocab-qwen2.gguf.inp"))
        EXPECT_EQ(tok.encode(c.text, false, false), c.ids) << c.text;
}

// The reference reader is slow on big arrays, so this check uses the 32000-token SentencePiece
// vocabulary and a small byte-level one.
TEST(WriteVocab, PypiGgufReadsLlamaCppKeys) {
    TANDEM_FIXTURE_OR_SKIP(src, "tokenizer/gguf-vocab/ggml-vocab-llama-spm.gguf");
    if (tandem::test::python().empty()) GTEST_SKIP() << "no Python with the gguf package";
    Vocab spm = load_vocab(tandem::gguf::File::open(src));
    spm.chat_template = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}";
    const auto j = read_with_pypi_gguf(write_gguf(spm, "spm-pypi"));
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["tokenizer.ggml.model"], "llama");
    ASSERT_EQ(j["tokenizer.ggml.tokens"].size(), 32000u);
    EXPECT_EQ(j["tokenizer.ggml.tokens"][29871], "\xE2\x96\x81");  // U+2581
    EXPECT_EQ(j["tokenizer.ggml.tokens"][3], "<0x00>");
    ASSERT_EQ(j["tokenizer.ggml.scores"].size(), 32000u);
    for (size_t i : {0, 100, 29871, 31999})
        EXPECT_FLOAT_EQ(j["tokenizer.ggml.scores"][i], spm.scores[i]);
    EXPECT_EQ(j["tokenizer.ggml.token_type"][3], 6);  // BYTE in gguf-py's TokenType
    EXPECT_EQ(j["tokenizer.ggml.token_type"][1], 3);  // CONTROL
    EXPECT_EQ(j["tokenizer.ggml.token_type"][0], 2);  // UNKNOWN
    EXPECT_EQ(j["tokenizer.ggml.bos_token_id"], 1);
    EXPECT_EQ(j["tokenizer.ggml.eos_token_id"], 2);
    EXPECT_EQ(j["tokenizer.ggml.unknown_token_id"], 0);
    EXPECT_EQ(j["tokenizer.ggml.add_bos_token"], true);
    EXPECT_EQ(j["tokenizer.ggml.add_space_prefix"], true);
    EXPECT_EQ(j["tokenizer.chat_template"], spm.chat_template);
    EXPECT_FALSE(j.contains("tokenizer.ggml.merges"));

    Vocab bpe;  // bytes of the GPT-2 alphabet "a", "b", "Ġ" and two merges
    bpe.pre = "qwen2";
    bpe.tokens = {"a",
                  "b",
                  "\xC4\xA0",
                  "ab",
                  "\xC4\xA0"
                  "ab",
                  "<|im_end|>"};
    bpe.types = {TokenType::Normal, TokenType::Normal, TokenType::Normal,
                 TokenType::Normal, TokenType::Normal, TokenType::Control};
    bpe.merges = {"a b",
                  "\xC4\xA0"
                  " ab"};
    bpe.eos_id = 5;
    const auto k = read_with_pypi_gguf(write_gguf(bpe, "bpe-pypi"));
    EXPECT_EQ(k["tokenizer.ggml.model"], "gpt2");
    EXPECT_EQ(k["tokenizer.ggml.pre"], "qwen2");
    EXPECT_EQ(k["tokenizer.ggml.merges"], nlohmann::json({"a b",
                                                          "\xC4\xA0"
                                                          " ab"}));
    EXPECT_EQ(k["tokenizer.ggml.token_type"], nlohmann::json({1, 1, 1, 1, 1, 3}));
    EXPECT_EQ(k["tokenizer.ggml.eos_token_id"], 5);
    EXPECT_FALSE(k.contains("tokenizer.ggml.bos_token_id"));
    EXPECT_FALSE(k.contains("tokenizer.ggml.scores"));
}

TEST(WriteVocab, SpmVocabKeepsScoresAndSpacePrefixFlag) {
    TANDEM_FIXTURE_OR_SKIP(src, "tokenizer/gguf-vocab/ggml-vocab-llama-spm.gguf");
    Vocab original = load_vocab(tandem::gguf::File::open(src));
    ASSERT_EQ(original.scores.size(), original.tokens.size());
    original.add_space_prefix = false;  // must survive the trip (Gemma 3 writes false)
    const Vocab reread = load_vocab(tandem::gguf::File::open(write_gguf(original, "spm-vocab")));
    expect_same_vocab(original, reread);
}

}  // namespace
