// HF -> GGUF planning rules and the errors a broken checkpoint gets. (Values of real conversions
// are checked against the Python packages in tests/scripts/convert_check.py.)
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"
#include "tandem/hf/convert.h"
#include "tandem/hf/safetensors.h"

using namespace tandem;
using namespace tandem::test;

namespace {

const char* kConfig =
    R"({"architectures": ["LlamaForCausalLM"], "vocab_size": %VOCAB%, "hidden_size": 4,
  "num_hidden_layers": 1, "intermediate_size": 8, "num_attention_heads": 2, "num_key_value_heads": 1,
  "rms_norm_eps": 1e-5, "tie_word_embeddings": true, %EXTRA%})";

// A one-layer llama folder; `tensors` maps HF names to shapes (F32 zeros).
std::filesystem::path make_model(
    const std::vector<std::pair<std::string, std::vector<uint64_t>>>& tensors,
    const std::string& extra_config = "\"x\": 0", uint64_t n_vocab = 8) {
    auto dir = temp_dir("hf-conv");
    std::string cfg = kConfig;
    cfg.replace(cfg.find("%EXTRA%"), 7, extra_config);
    cfg.replace(cfg.find("%VOCAB%"), 7, std::to_string(n_vocab));
    std::ofstream(dir / "config.json") << cfg;
    std::string header = "{";
    uint64_t off = 0;
    for (const auto& [name, shape] : tensors) {
        uint64_t n = 4;
        std::string s;
        for (auto d : shape) {
            n *= d;
            s += (s.empty() ? "" : ",") + std::to_string(d);
        }
        header += (header.size() > 1 ? "," : "") + std::string("\"") + name +
                  R"(":{"dtype":"F32","shape":[)" + s + R"(],"data_offsets":[)" +
                  std::to_string(off) + "," + std::to_string(off + n) + "]}";
        off += n;
    }
    header += "}";
    std::string file(8, '\0');
    uint64_t hl = header.size();
    std::memcpy(file.data(), &hl, 8);
    file += header + std::string(size_t(off), '\0');
    std::ofstream(dir / "model.safetensors", std::ios::binary)
        .write(file.data(), long(file.size()));
    return dir;
}

std::vector<std::pair<std::string, std::vector<uint64_t>>> good_tensors() {
    return {{"model.embed_tokens.weight", {8, 4}},
            {"model.norm.weight", {4}},
            {"model.layers.0.input_layernorm.weight", {4}},
            {"model.layers.0.post_attention_layernorm.weight", {4}},
            {"model.layers.0.self_attn.q_proj.weight", {4, 4}},
            {"model.layers.0.self_attn.k_proj.weight", {2, 4}},
            {"model.layers.0.self_attn.v_proj.weight", {2, 4}},
            {"model.layers.0.self_attn.o_proj.weight", {4, 4}},
            {"model.layers.0.mlp.gate_proj.weight", {8, 4}},
            {"model.layers.0.mlp.up_proj.weight", {8, 4}},
            {"model.layers.0.mlp.down_proj.weight", {4, 8}}};
}

std::string convert_error(const std::filesystem::path& dir, DType type = DType::F16) {
    try {
        hf::convert(dir, dir / "out.gguf", {.type = type});
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(HfConvert, OutputTypeKeepsVectorsNormsBiasesAndRouterInF32) {
    EXPECT_EQ(hf::output_type("blk.0.attn_q.weight", 2, DType::BF16), DType::BF16);
    EXPECT_EQ(hf::output_type("blk.0.ffn_up_exps.weight", 3, DType::F16), DType::F16);
    EXPECT_EQ(hf::output_type("blk.0.attn_norm.weight", 1, DType::F16), DType::F32);
    EXPECT_EQ(hf::output_type("blk.0.attn_q.bias", 1, DType::F16), DType::F32);
    EXPECT_EQ(hf::output_type("blk.0.ffn_gate_inp.weight", 2, DType::F16), DType::F32);
    EXPECT_EQ(hf::file_type_of(DType::F32), 0u);
    EXPECT_EQ(hf::file_type_of(DType::F16), 1u);
    EXPECT_EQ(hf::file_type_of(DType::BF16), 32u);
}

TEST(HfConvert, MinimalLlamaConvertsWithTiedEmbeddings) {
    auto dir = make_model(good_tensors());
    auto r = hf::convert(dir, dir / "out.gguf", {.type = DType::BF16, .name = "mini"});
    EXPECT_EQ(r.arch, "llama");
    EXPECT_FALSE(r.vocab_written);
    EXPECT_NE(r.vocab_note.find("no tokenizer"), std::string::npos);
    auto f = gguf::File::open(dir / "out.gguf");
    EXPECT_EQ(f.get_string("general.name"), "mini");
    EXPECT_EQ(f.get_u64("general.file_type"), 32u);
    EXPECT_EQ(f.tensor("output.weight"), nullptr);
    ASSERT_NE(f.tensor("blk.0.attn_k.weight"), nullptr);
    EXPECT_EQ(f.tensor("blk.0.attn_k.weight")->shape, (std::vector<uint64_t>{4, 2}));
    EXPECT_EQ(f.tensor("blk.0.attn_k.weight")->type, DType::BF16);
    EXPECT_EQ(f.tensor("blk.0.ffn_norm.weight")->type, DType::F32);
    EXPECT_EQ(f.get_u64("llama.rope.dimension_count"), 2u);
}

TEST(HfConvert, BrokenCheckpointsNameTheTensor) {
    auto with = [](auto edit, const std::string& extra = "\"x\": 0") {
        auto t = good_tensors();
        edit(t);
        return convert_error(make_model(t, extra));
    };
    using T = std::vector<std::pair<std::string, std::vector<uint64_t>>>;
    EXPECT_NE(with([](T& t) {
                  t.push_back({"model.layers.0.mystery.weight", {4}});
              }).find("'model.layers.0.mystery.weight' has no GGUF name"),
              std::string::npos);
    EXPECT_NE(with([](T& t) {
                  t.push_back({"model.layers.5.input_layernorm.weight", {4}});
              }).find("is for layer 5 but num_hidden_layers is 1"),
              std::string::npos);
    EXPECT_NE(with([](T& t) {
                  t[4].second = {6, 4};
              }).find("expected n_head * head_dim = 4"),
              std::string::npos);
    EXPECT_NE(with([](T& t) { t[1].second = {5}; }).find("'model.norm.weight' has shape [5]"),
              std::string::npos);
    EXPECT_NE(with([](T& t) { t.erase(t.begin() + 2); }).find("layer 0 has no input_layernorm"),
              std::string::npos);
    EXPECT_NE(with([](T&) {}, "\"tie_word_embeddings\": false").find("no lm_head.weight"),
              std::string::npos);
    EXPECT_NE(convert_error(make_model(good_tensors()), DType::Q4_K).find("not supported yet"),
              std::string::npos);
}

TEST(HfConvert, Llama3RopeScalingBecomesRopeFreqs) {
    auto t = good_tensors();
    t[4].second = {256, 4};  // q: 2 heads of 128
    t[5].second = {128, 4};  // k, v: 1 head of 128
    t[6].second = {128, 4};
    t[7].second = {4, 256};
    auto dir = make_model(t, R"("rope_theta": 500000.0, "head_dim": 128,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192})");
    auto cfg = hf::load_config(dir);
    auto plans = hf::plan_tensors(cfg, hf::SafetensorsModel::open(dir));
    const hf::TensorPlan* rf = nullptr;
    for (const auto& p : plans)
        if (p.name == "rope_freqs.weight") rf = &p;
    ASSERT_NE(rf, nullptr);
    ASSERT_EQ(rf->generated.size(), 64u);
    // High frequencies (short wavelengths) are untouched, the lowest are scaled by the factor,
    // and the band between is smooth and monotonic.
    EXPECT_EQ(rf->generated.front(), 1.0f);
    EXPECT_EQ(rf->generated.back(), 8.0f);
    for (size_t i = 1; i < rf->generated.size(); ++i)
        EXPECT_GE(rf->generated[i], rf->generated[i - 1]);
}

TEST(HfConvert, GgufToGgufRejectsItselfAndMissingSources) {
    auto dir = make_model(good_tensors());
    hf::convert(dir, dir / "a.gguf", {.type = DType::F32});
    hf::convert(dir / "a.gguf", dir / "b.gguf", {.type = DType::F16});
    auto b = gguf::File::open(dir / "b.gguf");
    EXPECT_EQ(b.get_u64("general.file_type"), 1u);
    EXPECT_EQ(b.get_u64("llama.block_count"), 1u);
    EXPECT_EQ(b.tensor("blk.0.attn_q.weight")->type, DType::F16);
    EXPECT_EQ(b.tensor("blk.0.attn_norm.weight")->type, DType::F32);
    try {
        hf::convert(dir / "a.gguf", dir / "a.gguf", {.type = DType::F16});
        FAIL() << "converting a file onto itself must fail";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("is the input file"), std::string::npos);
    }
    EXPECT_THROW(hf::convert(dir / "absent.gguf", dir / "b.gguf", {}), Error);
}

TEST(HfConvert, TokenizerFilesBecomeTheVocabularyPaddedToVocabSize) {
    TANDEM_FIXTURE_OR_SKIP(tok, "tokenizer/hf-qwen2");
    // The Qwen2 tokenizer's ids, read straight from its files.
    std::ifstream vj(tok / "vocab.json");
    const auto vocab_json = nlohmann::json::parse(vj);
    uint64_t max_id = 0;
    for (const auto& [token, id] : vocab_json.items())
        max_id = std::max<uint64_t>(max_id, id.get<uint64_t>());
    std::ifstream tc(tok / "tokenizer_config.json");
    const auto tok_config = nlohmann::json::parse(tc);
    if (tok_config.contains("added_tokens_decoder"))
        for (const auto& [id, t] : tok_config["added_tokens_decoder"].items())
            max_id = std::max<uint64_t>(max_id, std::stoull(id));
    const uint64_t n_vocab =
        max_id + 1 + 7;  // the model reserves 7 more ids than the tokenizer uses

    auto t = good_tensors();
    t[0].second = {n_vocab, 4};
    auto dir = make_model(t, "\"x\": 0", n_vocab);
    for (const char* f : {"vocab.json", "merges.txt", "tokenizer_config.json"})
        std::filesystem::copy_file(tok / f, dir / f);
    auto r = hf::convert(dir, dir / "out.gguf", {.type = DType::F32});
    EXPECT_TRUE(r.vocab_written);
    auto f = gguf::File::open(dir / "out.gguf");
    EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
    const auto& tokens = f.find("tokenizer.ggml.tokens")->as_array().items;
    const auto& types = f.find("tokenizer.ggml.token_type")->as_array().items;
    ASSERT_EQ(tokens.size(), n_vocab);
    for (const auto& [token, id] : vocab_json.items()) {
        ASSERT_EQ(tokens[id.get<size_t>()].as_string(), token) << id;
    }
    EXPECT_EQ(tokens[n_vocab - 1].as_string(), "[PAD" + std::to_string(n_vocab - 1) + "]");
    EXPECT_EQ(types[n_vocab - 1].as_i64(), 5);  // UNUSED

    // A tokenizer larger than the embedding cannot be right.
    auto small = make_model(good_tensors());
    for (const char* name : {"vocab.json", "merges.txt", "tokenizer_config.json"})
        std::filesystem::copy_file(tok / name, small / name);
    EXPECT_NE(convert_error(small).find("vocab_size is 8"), std::string::npos);
}
