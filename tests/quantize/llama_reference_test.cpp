// The quantizer against llama.cpp's llama-quantize: per-tensor types and the sha256 of every
// tensor's bytes, for the hf-tiny models (f32 conversions) and an edge-case model, in the five
// file types; and the type mix of a 32-layer model. The reference table was made by
// make_llama_refs.py from llama-quantize's own output files (llama.cpp is not needed here).
//
// TANDEM_QUANT_DUMP_DIR=dir: also write the inputs there, for make_llama_refs.py.
#include <gtest/gtest.h>

#include <cstdlib>

#include "quantize_test_util.h"
#include "tandem/hf/quantize.h"

namespace tandem::test {
namespace {

const std::vector<hf::QuantScheme> kSchemes = {hf::QuantScheme::Q8_0, hf::QuantScheme::Q4_0,
                                               hf::QuantScheme::Q4_K_M, hf::QuantScheme::Q5_K_M,
                                               hf::QuantScheme::Q6_K};

std::map<std::string, RefTensor> hash_tensors(const std::filesystem::path& p) {
    const auto f = gguf::File::open(p);
    std::map<std::string, RefTensor> out;
    for (const auto& t : f.tensors())
        out[t.name] = {upper(dtype_name(t.type)), sha256_hex(f.tensor_data(t), t.nbytes)};
    return out;
}

void dump(const std::filesystem::path& src, const std::string& model) {
    const char* dir = std::getenv("TANDEM_QUANT_DUMP_DIR");
    if (!dir || !*dir) return;
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(src, std::filesystem::path(dir) / (model + ".f32.gguf"),
                               std::filesystem::copy_options::overwrite_existing);
}

// Per type: tensors equal / all tensors of that type in llama.cpp's output.
struct Tally {
    std::map<std::string, std::pair<int, int>> by_type;
};

void compare_model(const std::string& model, const std::filesystem::path& input, Tally& tally) {
    const auto& ref = llama_reference();
    auto it = ref.find(model);
    ASSERT_NE(it, ref.end()) << model << " is not in llama_quantize_reference.tsv";
    // The input must be what the reference was made from, or a mismatch would mean nothing.
    const auto input_now = hash_tensors(input);
    const auto& input_ref = it->second.at("input");
    ASSERT_EQ(input_now.size(), input_ref.size()) << model;
    for (const auto& [name, r] : input_ref)
        ASSERT_EQ(input_now.at(name).sha256, r.sha256)
            << model << ": input tensor " << name
            << " differs from the one the reference was made from (converter changed? rerun "
               "make_llama_refs.py)";
    for (auto scheme : kSchemes) {
        const std::string sname(hf::quant_scheme_name(scheme));
        SCOPED_TRACE(model + " " + sname);
        const auto out = temp_dir("quantize-llama") / (model + "." + sname + ".gguf");
        hf::QuantizeOptions o;
        o.scheme = scheme;
        o.threads = 2;
        hf::quantize_gguf(input, out, o);
        const auto got = hash_tensors(out);
        const auto& want = it->second.at(sname);
        ASSERT_EQ(got.size(), want.size());
        for (const auto& [name, w] : want) {
            const auto& g = got.at(name);
            EXPECT_EQ(g.type, w.type) << name;
            auto& t = tally.by_type[w.type];
            ++t.second;
            if (g.type == w.type && g.sha256 == w.sha256)
                ++t.first;
            else if (g.type == w.type)
                ADD_FAILURE() << name << " (" << w.type << "): bytes differ from llama-quantize's";
        }
        std::filesystem::remove(out);
    }
}

void print(const Tally& t) {
    for (const auto& [type, n] : t.by_type)
        std::printf("  %-5s %3d of %3d tensors bit-identical to llama-quantize\n", type.c_str(),
                    n.first, n.second);
}

TEST(LlamaQuantize, HfTinyModelsMatchBitForBit) {
    Tally tally;
    int seen = 0;
    for (const auto& m : tiny_models()) {
        auto input = tiny_f32(m);
        if (!input) continue;
        ++seen;
        dump(*input, m);
        compare_model(m, *input, tally);
    }
    if (seen == 0) GTEST_SKIP() << "fixture hf-tiny not found";
    print(tally);
}

TEST(LlamaQuantize, EdgeCaseRowsMatchBitForBit) {
    auto input = edge_case_model();
    if (!input) GTEST_SKIP() << "fixture hf-tiny/llama-tiny not found";
    dump(*input, "edge-cases");
    Tally tally;
    compare_model("edge-cases", *input, tally);
    print(tally);
    // The extra tensors exercised both fallbacks: 96 columns (no 256 block) and 48 (F16).
    const auto& q4km = llama_reference().at("edge-cases").at("Q4_K_M");
    EXPECT_EQ(q4km.at("blk.0.odd96.weight").type, "Q5_0");
    EXPECT_EQ(q4km.at("blk.0.odd48.weight").type, "F16");
}

TEST(LlamaQuantize, DeepModelTypeMixMatches) {
    if (const char* dir = std::getenv("TANDEM_QUANT_DUMP_DIR"); dir && *dir) {
        std::filesystem::create_directories(dir);
        write_deep_model(std::filesystem::path(dir) / "deep32.f32.gguf");
    }
    const auto& ref = llama_reference();
    ASSERT_TRUE(ref.count("deep32"));
    const auto descs = deep_model_tensors();
    for (auto scheme : kSchemes) {
        const std::string sname(hf::quant_scheme_name(scheme));
        const auto choices = hf::plan_quant_types(descs, scheme, deep_model_facts());
        const auto& want = ref.at("deep32").at(sname);
        ASSERT_EQ(want.size(), descs.size()) << sname;
        int more_bits = 0;
        for (size_t i = 0; i < descs.size(); ++i) {
            EXPECT_EQ(upper(dtype_name(choices[i].type)), want.at(descs[i].name).type)
                << sname << " " << descs[i].name;
            more_bits += choices[i].type == DType::Q6_K;
        }
        // Q4_K_M: output + 16 of 32 attn_v + 16 of 32 ffn_down get Q6_K (the first and last
        // 4 layers and every third one between).
        if (scheme == hf::QuantScheme::Q4_K_M) {
            EXPECT_EQ(more_bits, 1 + 16 + 16);
        }
    }
}

}  // namespace
}  // namespace tandem::test
