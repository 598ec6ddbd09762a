// The quantizer's contract beyond llama.cpp equality: the same bytes on any thread count, from
// a GGUF or straight from the Hugging Face folder, progress that ends at the total, and clear
// errors with no output file for bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>

#include "quantize_test_util.h"
#include "tandem/common/error.h"
#include "tandem/hf/quantize.h"

namespace tandem::test {
namespace {

std::string file_bytes(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
}

std::vector<std::string> tensor_hashes(const std::filesystem::path& p) {
    const auto f = gguf::File::open(p);
    std::vector<std::string> out;
    for (const auto& t : f.tensors())
        out.push_back(t.name + " " + std::string(dtype_name(t.type)) + " " +
                      sha256_hex(f.tensor_data(t), t.nbytes));
    std::sort(out.begin(), out.end());
    return out;
}

// Nothing at `out`, and no temporary file beside it.
void expect_no_output(const std::filesystem::path& out) {
    EXPECT_FALSE(std::filesystem::exists(out)) << out;
    EXPECT_FALSE(std::filesystem::exists(out.string() + ".tmp")) << out << ".tmp";
}

template <typename F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(QuantizeModel, SameBytesOnOneAndFourThreads) {
    auto input = tiny_f32("qwen3moe-tiny");
    if (!input) GTEST_SKIP() << "fixture hf-tiny/qwen3moe-tiny not found";
    const auto dir = temp_dir("quantize-threads");
    hf::QuantizeOptions o;
    o.scheme = hf::QuantScheme::Q4_K_M;
    o.threads = 1;
    hf::quantize_gguf(*input, dir / "t1.gguf", o);
    o.threads = 4;
    hf::quantize_gguf(*input, dir / "t4.gguf", o);
    EXPECT_TRUE(file_bytes(dir / "t1.gguf") == file_bytes(dir / "t4.gguf"));
}

TEST(QuantizeModel, HfFolderEqualsConvertThenQuantize) {
    auto src = fixture("hf-tiny/gemma3-tiny");
    auto input = tiny_f32("gemma3-tiny");
    if (!src || !input) GTEST_SKIP() << "fixture hf-tiny/gemma3-tiny not found";
    const auto dir = temp_dir("quantize-hf");
    for (auto scheme : {hf::QuantScheme::Q6_K, hf::QuantScheme::Q4_0}) {
        hf::ConvertOptions co;
        co.quant = scheme;
        hf::convert_hf(*src, dir / "direct.gguf", co);
        hf::QuantizeOptions qo;
        qo.scheme = scheme;
        hf::quantize_gguf(*input, dir / "two-step.gguf", qo);
        EXPECT_EQ(tensor_hashes(dir / "direct.gguf"), tensor_hashes(dir / "two-step.gguf"));
        const auto f = gguf::File::open(dir / "direct.gguf");
        EXPECT_EQ(f.get_u64("general.file_type"), hf::file_type_of(scheme));
        EXPECT_EQ(f.get_u64("general.quantization_version"), 2u);
    }
}

TEST(QuantizeModel, ProgressCoversEveryTensorAndEndsAtTotal) {
    auto input = tiny_f32("llama-tiny");
    if (!input) GTEST_SKIP() << "fixture hf-tiny/llama-tiny not found";
    std::vector<hf::QuantizeProgress> seen;
    hf::QuantizeOptions o;
    o.scheme = hf::QuantScheme::Q8_0;
    o.progress = [&](const hf::QuantizeProgress& p) { seen.push_back(p); };
    const auto r = hf::quantize_gguf(*input, temp_dir("quantize-progress") / "q.gguf", o);
    ASSERT_FALSE(seen.empty());
    uint64_t last = 0;
    std::set<size_t> tensors;
    for (const auto& p : seen) {
        EXPECT_GE(p.bytes_done, last);
        EXPECT_EQ(p.bytes_total, r.bytes_in);
        EXPECT_EQ(p.n_tensors, r.n_tensors);
        last = p.bytes_done;
        tensors.insert(p.tensor_index);
    }
    EXPECT_EQ(last, r.bytes_in);
    EXPECT_EQ(tensors.size(), r.n_tensors);
    EXPECT_LT(r.bytes_out, r.bytes_in / 3);  // q8_0 is ~3.8x smaller than f32
}

TEST(QuantizeModel, BadInputGivesClearErrorAndNoFile) {
    const auto dir = temp_dir("quantize-bad");
    hf::QuantizeOptions o;
    o.scheme = hf::QuantScheme::Q4_K_M;

    EXPECT_NE(error_of([&] {
                  hf::quantize_gguf(dir / "missing.gguf", dir / "a.gguf", o);
              }).find("does not exist"),
              std::string::npos);
    expect_no_output(dir / "a.gguf");

    {  // not a GGUF
        std::ofstream(dir / "junk.gguf") << "this is not a gguf file at all, just text";
        EXPECT_NE(error_of([&] {
                      hf::quantize_gguf(dir / "junk.gguf", dir / "b.gguf", o);
                  }).find("junk.gguf"),
                  std::string::npos);
        expect_no_output(dir / "b.gguf");
    }

    auto input = tiny_f32("llama-tiny");
    if (!input) GTEST_SKIP() << "fixture hf-tiny/llama-tiny not found";

    {  // truncated
        std::string bytes = file_bytes(*input);
        std::ofstream(dir / "cut.gguf", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
        const std::string e =
            error_of([&] { hf::quantize_gguf(dir / "cut.gguf", dir / "c.gguf", o); });
        EXPECT_NE(e.find("cut.gguf"), std::string::npos) << e;
        EXPECT_NE(e.find("past end of data section"), std::string::npos) << e;
        expect_no_output(dir / "c.gguf");
    }

    // A NaN deep inside the last tensor: found while writing; the half-written file is removed.
    const auto f = gguf::File::open(*input);
    gguf::Writer w(f.alignment());
    for (const auto& [k, v] : f.metadata()) w.set(k, v);
    std::vector<float> poisoned;
    for (const auto& t : f.tensors()) {
        if (t.name == "blk.2.ffn_up.weight") {
            poisoned.assign(reinterpret_cast<const float*>(f.tensor_data(t)),
                            reinterpret_cast<const float*>(f.tensor_data(t)) + t.n_elements());
            poisoned[poisoned.size() - 300] = std::numeric_limits<float>::quiet_NaN();
            w.add_tensor(t.name, t.type, t.shape, poisoned.data());
        } else {
            w.add_tensor(t.name, t.type, t.shape, f.tensor_data(t));
        }
    }
    w.write(dir / "nan.gguf");
    const std::string nan_error =
        error_of([&] { hf::quantize_gguf(dir / "nan.gguf", dir / "d.gguf", o); });
    EXPECT_NE(nan_error.find("blk.2.ffn_up.weight"), std::string::npos) << nan_error;
    EXPECT_NE(nan_error.find("NaN"), std::string::npos) << nan_error;
    expect_no_output(dir / "d.gguf");

    // Values an f16 scale cannot hold (llama.cpp's validation refuses them too).
    {
        gguf::Writer w2(f.alignment());
        for (const auto& [k, v] : f.metadata()) w2.set(k, v);
        std::vector<float> huge(256 * 4, 1e9f);
        for (const auto& t : f.tensors()) w2.add_tensor(t.name, t.type, t.shape, f.tensor_data(t));
        w2.add_tensor("blk.0.huge.weight", DType::F32, {256, 4}, huge.data());
        w2.write(dir / "huge.gguf");
        const std::string e =
            error_of([&] { hf::quantize_gguf(dir / "huge.gguf", dir / "e.gguf", o); });
        EXPECT_NE(e.find("overflow the f16 block scale"), std::string::npos) << e;
        expect_no_output(dir / "e.gguf");
    }

    // Already quantized input: requantizing is refused, as llama-quantize does by default.
    hf::quantize_gguf(*input, dir / "q8.gguf", {hf::QuantScheme::Q8_0, 2, "", {}});
    const std::string requant =
        error_of([&] { hf::quantize_gguf(dir / "q8.gguf", dir / "f.gguf", o); });
    EXPECT_NE(requant.find("already q8_0"), std::string::npos) << requant;
    expect_no_output(dir / "f.gguf");

    // Output over its input.
    std::filesystem::copy_file(*input, dir / "self.gguf");
    EXPECT_NE(error_of([&] {
                  hf::quantize_gguf(dir / "self.gguf", dir / "self.gguf", o);
              }).find("is the input file"),
              std::string::npos);
    EXPECT_EQ(file_bytes(dir / "self.gguf"), file_bytes(*input));
}

TEST(QuantizeModel, SchemeNames) {
    EXPECT_EQ(hf::quant_scheme_from_name("q4_k_m"), hf::QuantScheme::Q4_K_M);
    EXPECT_EQ(hf::quant_scheme_from_name("Q6_K"), hf::QuantScheme::Q6_K);
    EXPECT_FALSE(hf::quant_scheme_from_name("q4_k"));
    EXPECT_FALSE(hf::quant_scheme_from_name("q3_k_m"));
    EXPECT_EQ(hf::file_type_of(hf::QuantScheme::Q4_K_M), 15u);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
    EXPECT_EQ(hf::file_type_of(hf::QuantScheme::Q5_K_M), 17u);
    EXPECT_EQ(hf::file_type_of(hf::QuantScheme::Q6_K), 18u);
    EXPECT_EQ(hf::file_type_of(hf::QuantScheme::Q8_0), 7u);
    EXPECT_EQ(hf::file_type_of(hf::QuantScheme::Q4_0), 2u);
}

}  // namespace
}  // namespace tandem::test
