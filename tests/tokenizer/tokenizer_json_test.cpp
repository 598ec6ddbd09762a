// load_hf_vocab on tokenizer.json, the form most Hugging Face models ship. The fixtures hold the
// same vocabularies in their older file forms, so each test writes a tokenizer.json in the
// structure transformers saves for that model family (Llama 3: merges as pairs, a Split regex,
// a TemplateProcessing BOS; Qwen2: merges as strings; Llama 2: SentencePiece-style BPE with byte
// fallback and a "▁" prefix normalizer) and checks the fixture vectors through it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <tuple>

#include "fixtures.h"
#include "tandem/gguf/gguf.h"
#include "tandem/tokenizer/tokenizer.h"
#include "vector_files.h"

namespace {

using nlohmann::json;
using namespace tandem::tokenizer;

const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::vector<std::string> merges_lines(const std::filesystem::path& p) {
    std::vector<std::string> out;
    std::ifstream in(p);
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && !line.starts_with("#version")) out.push_back(line);
    return out;
}

json added(int id, const std::string& content) {
    return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
            {"rstrip", false}, {"normalized", false}, {"special", true}};
}

json byte_level_pre(const char* regex) {
    return {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", regex}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"},
               {"add_prefix_space", false},
               {"trim_offsets", true},
               {"use_regex", false}}}}};
}

void check_vectors(const Vocab& v, const std::filesystem::path& inp) {
    const Tokenizer tok(v);
    size_t n = 0;
    for (const auto& c : tandem::test::read_tokenizer_cases(inp)) {
        EXPECT_EQ(tok.encode(c.text, false, false), c.ids) << c.text;
        ++n;
    }
    EXPECT_GT(n, 30u);
}

TEST(TokenizerJson, Llama3MergePairsAndTemplateBos) {
    TANDEM_FIXTURE_OR_SKIP(src, "tokenizer/hf-llama3");
    json merges = json::array();
    for (const auto& m : merges_lines(src / "vocab.bpe")) {
        const size_t sp = m.find(' ', 1);
        merges.push_back({m.substr(0, sp), m.substr(sp + 1)});
    }
    std::ifstream enc(src / "encoder.json");
    const json tj = {{"version", "1.0"},
                     {"added_tokens",
                      {added(128000, "<|begin_of_text|>"), added(128001, "<|end_of_text|>"),
                       added(128009, "<|eot_id|>")}},
                     {"normalizer", nullptr},
                     {"pre_tokenizer", byte_level_pre(kLlama3Regex)},
                     {"post_processor",
                      {{"type", "Sequence"},
                       {"processors",
                        {{{"type", "ByteLevel"}},
                         {{"type", "TemplateProcessing"},
                          {"single",
                           {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
                            {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}}}}}},
                     {"decoder", {{"type", "ByteLevel"}}},
                     {"model",
                      {{"type", "BPE"},
                       {"ignore_merges", true},
                       {"byte_fallback", false},
                       {"vocab", json::parse(enc)},
                       {"merges", merges}}}};
    const auto dir = tandem::test::temp_dir("llama3-tokenizer-json");
    std::ofstream(dir / "tokenizer.json") << tj.dump();

    const Vocab v = load_hf_vocab(dir);
    EXPECT_EQ(v.pre, "llama-bpe");
    EXPECT_EQ(v.size(), 128010u);
    EXPECT_EQ(v.type(128005), TokenType::Unused);  // the gap between added ids
    EXPECT_TRUE(v.add_bos);
    EXPECT_EQ(v.bos_id, 128000);
    EXPECT_EQ(v.eot_id, 128009);
    EXPECT_TRUE(v.is_eog(128009));
    check_vectors(v, src / "ggml-vocab-llama-bpe.gguf.inp");
    const Tokenizer tok(v);
    EXPECT_EQ(tok.encode("Hi", true).front(), 128000);
}

TEST(TokenizerJson, Qwen2MergeStringsAndConfig) {
    TANDEM_FIXTURE_OR_SKIP(src, "tokenizer/hf-qwen2");
    std::ifstream vocab(src / "vocab.json");
    const json tj = {{"added_tokens",
                      {added(151643, "<|endoftext|>"), added(151644, "<|im_start|>"),
                       added(151645, "<|im_end|>")}},
                     {"normalizer", {{"type", "NFC"}}},
                     {"pre_tokenizer", byte_level_pre(kQwen2Regex)},
                     {"decoder", {{"type", "ByteLevel"}}},
                     {"model",
                      {{"type", "BPE"},
                       {"vocab", json::parse(vocab)},
                       {"merges", merges_lines(src / "merges.txt")}}}};
    const auto dir = tandem::test::temp_dir("qwen2-tokenizer-json");
    std::ofstream(dir / "tokenizer.json") << tj.dump();
    std::filesystem::copy_file(src / "tokenizer_config.json", dir / "tokenizer_config.json");

    const Vocab v = load_hf_vocab(dir);
    EXPECT_EQ(v.pre, "qwen2");
    EXPECT_FALSE(v.add_bos);
    EXPECT_EQ(v.eos_id, 151643);
    EXPECT_EQ(v.type(151644), TokenType::Control);
    EXPECT_NE(v.chat_template.find("<|im_start|>"), std::string::npos);
    check_vectors(v, src / "ggml-vocab-qwen2.gguf.inp");
}

// A SentencePiece vocabulary as transformers' LlamaConverter writes it: merges are every split of
// every token into two tokens, ordered by the merged token's score.
TEST(TokenizerJson, SentencePieceStyleBpeWithByteFallback) {
    TANDEM_FIXTURE_OR_SKIP(src, "tokenizer/gguf-vocab/ggml-vocab-llama-spm.gguf");
    const Vocab spm = load_vocab(tandem::gguf::File::open(src));
    std::map<std::string, int> id_of;
    for (size_t i = 0; i < spm.size(); ++i) id_of.emplace(spm.tokens[i], int(i));
    std::vector<std::tuple<float, int, int, int>> found;  // -score, merged id, left, right
    for (size_t i = 0; i < spm.size(); ++i) {
        if (spm.types[i] != TokenType::Normal) continue;
        const std::string& t = spm.tokens[i];
        for (size_t cut = 1; cut < t.size(); ++cut) {
            if ((uint8_t(t[cut]) & 0xC0) == 0x80) continue;  // inside a UTF-8 character
            auto l = id_of.find(t.substr(0, cut)), r = id_of.find(t.substr(cut));
            if (l != id_of.end() && r != id_of.end())
                found.emplace_back(-spm.scores[i], int(i), l->second, r->second);
        }
    }
    std::sort(found.begin(), found.end());
    json merges = json::array(), vocab = json::object(), added_tokens = json::array();
    for (const auto& [s, m, l, r] : found)
        merges.push_back({spm.tokens[size_t(l)], spm.tokens[size_t(r)]});
    for (size_t i = 0; i < spm.size(); ++i) vocab[spm.tokens[i]] = i;
    added_tokens.push_back(added(0, "<unk>"));
    added_tokens.push_back(added(1, "<s>"));
    added_tokens.push_back(added(2, "</s>"));
    const json tj = {
        {"added_tokens", added_tokens},
        {"normalizer",
         {{"type", "Sequence"},
          {"normalizers",
           {{{"type", "Prepend"}, {"prepend", "\u2581"}},
            {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}}},
        {"pre_tokenizer", nullptr},
        {"decoder",
         {{"type", "Sequence"},
          {"decoders",
           {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
            {{"type", "ByteFallback"}},
            {{"type", "Fuse"}},
            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
        {"model",
         {{"type", "BPE"},
          {"unk_token", "<unk>"},
          {"byte_fallback", true},
          {"vocab", vocab},
          {"merges", merges}}}};
    const auto dir = tandem::test::temp_dir("spm-tokenizer-json");
    std::ofstream(dir / "tokenizer.json") << tj.dump();

    const Vocab v = load_hf_vocab(dir);
    EXPECT_EQ(v.model, ModelKind::Spm);
    EXPECT_TRUE(v.add_space_prefix);
    EXPECT_EQ(v.unk_id, 0);
    EXPECT_EQ(v.type(0), TokenType::Unknown);
    EXPECT_EQ(v.type(1), TokenType::Control);
    EXPECT_EQ(v.type(3), TokenType::Byte);  // <0x00>
    EXPECT_EQ(v.tokens, spm.tokens);
    check_vectors(v, std::filesystem::path(src.string() + ".inp"));
}

}  // namespace
