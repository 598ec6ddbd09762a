// safetensors reader against files written by the PyPI safetensors package (values exact), the
// real hf-tiny checkpoints, and broken or hostile headers and indexes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>

#include "../gguf/python_runner.h"
#include "fixtures.h"
#include "tandem/common/error.h"
#include "tandem/hf/config.h"
#include "tandem/hf/safetensors.h"

using namespace tandem;
using namespace tandem::test;
using nlohmann::json;

namespace {

void expect_model_matches(const hf::SafetensorsModel& m, const json& want) {
    ASSERT_EQ(m.tensors().size(), want.size());
    for (auto it = want.begin(); it != want.end(); ++it) {
        SCOPED_TRACE(it.key());
        const auto* t = m.find(it.key());
        ASSERT_NE(t, nullptr);
        EXPECT_EQ(std::string(dtype_name(t->dtype)),
                  it.value()["dtype"].get<std::string>() == "F32"   ? "f32"
                  : it.value()["dtype"].get<std::string>() == "F16" ? "f16"
                                                                    : "bf16");
        EXPECT_EQ(t->shape, it.value()["shape"].get<std::vector<uint64_t>>());
        const auto values = m.read_f32(*t);
        const auto expected = it.value()["values"].get<std::vector<float>>();
        ASSERT_EQ(values.size(), expected.size());
        for (size_t i = 0; i < values.size(); ++i)
            ASSERT_EQ(values[i], expected[i]) << "element " << i;
    }
}

std::filesystem::path write_bytes(const std::filesystem::path& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), long(bytes.size()));
    return p;
}

// A safetensors file from a header JSON text and a data section of n zero bytes.
std::string st_file(const std::string& header, size_t data_bytes) {
    std::string s(8, '\0');
    uint64_t n = header.size();
    std::memcpy(s.data(), &n, 8);
    return s + header + std::string(data_bytes, '\0');
}

std::string parse_error(const std::string& bytes) {
    try {
        hf::parse_safetensors_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                     bytes.size(), "bad.safetensors");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(Safetensors, FilesWrittenByThePythonPackageReadExactly) {
    TANDEM_PYTHON_OR_SKIP();
    const auto dir = temp_dir("st-py");
    auto r = run_script("safetensors_make.py", {dir.string()});
    ASSERT_EQ(r.exit_code, 0);
    const auto want = json::parse(r.out);
    {
        SCOPED_TRACE("single file");
        expect_model_matches(hf::SafetensorsModel::open(dir / "single.safetensors"),
                             want["single"]);
    }
    {
        SCOPED_TRACE("sharded folder");
        auto m = hf::SafetensorsModel::open(dir / "sharded");
        EXPECT_EQ(m.shards().size(), 2u);
        expect_model_matches(m, want["sharded"]);
        EXPECT_EQ(m.find("c.weight")->shard, 1u);
        EXPECT_THROW(m.get("absent"), Error);
    }
}

TEST(Safetensors, ShardedIndexProblemsAreErrors) {
    TANDEM_PYTHON_OR_SKIP();
    const auto dir = temp_dir("st-idx");
    ASSERT_EQ(run_script("safetensors_make.py", {dir.string()}).exit_code, 0);
    const auto index = dir / "sharded" / "model.safetensors.index.json";
    auto with_map = [&](const std::string& weight_map) {
        write_bytes(index, R"({"weight_map": )" + weight_map + "}");
        try {
            hf::SafetensorsModel::open(dir / "sharded");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(with_map(R"({"a.weight": "../single.safetensors"})").find("not a file name"),
              std::string::npos);
    EXPECT_NE(with_map(R"({"x.weight": "model-00001-of-00002.safetensors"})")
                  .find("'x.weight' listed in the index"),
              std::string::npos);
    EXPECT_NE(with_map(R"({"a.weight": "missing.safetensors"})").find("missing.safetensors"),
              std::string::npos);
    EXPECT_NE(with_map(R"({"a.weight": 3})").find("not a file name"), std::string::npos);
    EXPECT_NE(with_map("{}").find("empty"), std::string::npos);
    write_bytes(index, "{not json");
    EXPECT_THROW(hf::SafetensorsModel::open(dir / "sharded"), Error);
    EXPECT_THROW(hf::SafetensorsModel::open(dir / "nothing-here"), Error);
}

TEST(Safetensors, TinyCheckpointsMatchTheirConfig) {
    TANDEM_FIXTURE_OR_SKIP(root, "hf-tiny");
    for (const char* name :
         {"llama-tiny", "qwen2-tiny", "qwen3-tiny", "qwen3moe-tiny", "gemma3-tiny"}) {
        SCOPED_TRACE(name);
        const auto cfg = hf::load_config(root / name);
        const auto m = hf::SafetensorsModel::open(root / name);
        const auto& emb = m.get("model.embed_tokens.weight");
        EXPECT_EQ(emb.dtype, DType::BF16);
        EXPECT_EQ(emb.shape, (std::vector<uint64_t>{cfg.n_vocab, cfg.n_embd}));
        const auto& q = m.get("model.layers.0.self_attn.q_proj.weight");
        EXPECT_EQ(q.shape, (std::vector<uint64_t>{cfg.n_head * cfg.head_dim, cfg.n_embd}));
        auto v = m.read_f32(m.get("model.norm.weight"));
        EXPECT_EQ(v.size(), cfg.n_embd);
    }
}

TEST(Safetensors, HostileHeadersAreErrors) {
    auto has = [](const std::string& msg, const std::string& needle) {
        return msg.find(needle) != std::string::npos &&
               msg.find("bad.safetensors") != std::string::npos;
    };
    EXPECT_EQ(parse_error(st_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8)),
              "");
    EXPECT_TRUE(has(parse_error(std::string(7, '\0')), "too small"));
    std::string huge(16, '\0');
    huge[6] = 1;  // 2^48
    EXPECT_TRUE(has(parse_error(huge), "over the 100 MB limit"));
    std::string past(16, '\0');
    past[0] = 100;
    EXPECT_TRUE(has(parse_error(past), "past end of file"));
    EXPECT_TRUE(has(parse_error(st_file("{not json", 0)), "not valid JSON"));
    EXPECT_TRUE(has(parse_error(st_file("[1,2]", 0)), "not a JSON object"));
    EXPECT_TRUE(has(parse_error(st_file(R"({"w":3})", 0)), "'w': entry is not an object"));
    EXPECT_TRUE(
        has(parse_error(st_file(R"({"w":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8)),
            "dtype I64 not supported"));
    EXPECT_TRUE(has(parse_error(st_file(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", 4)),
                    "missing dtype"));
    EXPECT_TRUE(
        has(parse_error(st_file(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)),
            "non-negative integer"));
    EXPECT_TRUE(
        has(parse_error(st_file(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4)),
            "non-negative integer"));
    EXPECT_TRUE(
        has(parse_error(st_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4)),
            "outside the data section"));
    EXPECT_TRUE(
        has(parse_error(st_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)),
            "outside the data section"));
    EXPECT_TRUE(
        has(parse_error(st_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)),
            "8 bytes of data for shape of 3 elements"));
    EXPECT_TRUE(has(
        parse_error(st_file(
            R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8)),
        "shape overflows"));
    EXPECT_TRUE(
        has(parse_error(st_file(
                R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8)),
            "bytes of data for shape"));
    EXPECT_TRUE(
        has(parse_error(st_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4)),
            "data_offsets must be"));
}

TEST(Safetensors, EveryTruncationOfARealFileIsAnError) {
    TANDEM_FIXTURE_OR_SKIP(file, "hf-tiny/qwen3-tiny/model.safetensors");
    std::ifstream in(file, std::ios::binary);
    std::string head(4096, '\0');
    in.read(head.data(), long(head.size()));
    uint64_t n = 0;
    std::memcpy(&n, head.data(), 8);
    const uint64_t full = std::filesystem::file_size(file);
    ASSERT_LT(n + 8, head.size() * 4);
    // Cutting the file anywhere in the header or the data makes the header lie about the data.
    std::string whole(size_t(n + 8), '\0');
    std::ifstream(file, std::ios::binary).read(whole.data(), long(whole.size()));
    for (uint64_t len = 0; len < n + 8; len += 7) {
        EXPECT_THROW(hf::parse_safetensors_header(reinterpret_cast<const uint8_t*>(whole.data()),
                                                  size_t(len), len, "cut.safetensors"),
                     Error)
            << len;
    }
    for (uint64_t cut : {full - 1, full - 1000, n + 9}) {
        EXPECT_THROW(hf::parse_safetensors_header(reinterpret_cast<const uint8_t*>(whole.data()),
                                                  whole.size(), cut, "cut.safetensors"),
                     Error)
            << cut;
    }
}
