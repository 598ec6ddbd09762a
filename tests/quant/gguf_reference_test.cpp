// Our dequantisers and reference quantisers against the PyPI gguf package (gguf.quants), bit for
// bit, on random rows generated here and converted by gguf_reference.py in one Python run.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "quant_test_util.h"
#include "tandem/quant/fp16.h"
#include "tandem/quant/quant.h"

namespace tandem::quant::test {
namespace {

struct TypeCase {
    DType type;
    const char* gguf_name;
    std::vector<int> f16_fields;  // byte offsets of f16 scale fields in a block
};

const std::vector<TypeCase>& dequant_cases() {
    static const std::vector<TypeCase> cases = {
        {DType::F16, "F16", {}},        {DType::BF16, "BF16", {}},
        {DType::Q4_0, "Q4_0", {0}},     {DType::Q4_1, "Q4_1", {0, 2}},
        {DType::Q5_0, "Q5_0", {0}},     {DType::Q5_1, "Q5_1", {0, 2}},
        {DType::Q8_0, "Q8_0", {0}},     {DType::Q2_K, "Q2_K", {80, 82}},
        {DType::Q3_K, "Q3_K", {108}},   {DType::Q4_K, "Q4_K", {0, 2}},
        {DType::Q5_K, "Q5_K", {0, 2}},  {DType::Q6_K, "Q6_K", {208}},
        {DType::IQ4_NL, "IQ4_NL", {0}}, {DType::IQ4_XS, "IQ4_XS", {0}},
    };
    return cases;
}

// The types gguf.quants.quantize implements (the K-quants it does not).
const std::vector<TypeCase>& quant_cases() {
    static const std::vector<TypeCase> cases = {
        {DType::F16, "F16", {}},   {DType::BF16, "BF16", {}}, {DType::Q4_0, "Q4_0", {}},
        {DType::Q4_1, "Q4_1", {}}, {DType::Q5_0, "Q5_0", {}}, {DType::Q5_1, "Q5_1", {}},
        {DType::Q8_0, "Q8_0", {}},
    };
    return cases;
}

// Random block bytes with finite f16 scales (random bytes there could be NaN or inf).
std::vector<uint8_t> random_blocks(const TypeCase& c, uint32_t seed) {
    std::mt19937 rng(seed);
    const auto& tr = dtype_traits(c.type);
    if (c.type == DType::F16 || c.type == DType::BF16) {
        // Every 16-bit pattern: normals, subnormals, zeros, infinities and NaNs.
        std::vector<uint8_t> v(65536 * 2);
        for (uint32_t i = 0; i < 65536; ++i) {
            v[2 * i] = static_cast<uint8_t>(i & 0xff);
            v[2 * i + 1] = static_cast<uint8_t>(i >> 8);
        }
        return v;
    }
    const int n_blocks = tr.block_elems == 256 ? 96 : 768;
    std::vector<uint8_t> v(static_cast<size_t>(n_blocks) * tr.block_bytes);
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& b : v) b = static_cast<uint8_t>(byte(rng));
    std::uniform_real_distribution<float> scale(-2.f, 2.f);
    std::uniform_int_distribution<int> pick(0, 19);
    for (int i = 0; i < n_blocks; ++i) {
        for (int off : c.f16_fields) {
            float s = scale(rng);
            if (pick(rng) == 0) s *= 1e-6f;  // subnormal f16 scales
            const uint16_t h = fp32_to_fp16(s);
            std::memcpy(&v[static_cast<size_t>(i) * tr.block_bytes + off], &h, 2);
        }
    }
    return v;
}

// Rows to quantise: random blocks plus the edge cases a quantiser can get wrong (all zero,
// constant, exact halves that hit rounding ties, one outlier, tiny and negative-only blocks).
std::vector<float> quant_input(DType t, uint32_t seed) {
    std::vector<float> v = random_row(32 * 512, seed);
    auto block = [&](auto f) {
        for (int j = 0; j < 32; ++j) v.push_back(f(j));
    };
    block([](int) { return 0.f; });
    block([](int) { return 0.75f; });
    block([](int j) { return static_cast<float>(j - 16) * 0.5f; });
    block([](int j) { return j == 7 ? -100.f : 0.01f * static_cast<float>(j); });
    block([](int j) { return 1e-30f * static_cast<float>(j + 1); });
    block([](int j) { return -1.f - static_cast<float>(j) * 0.25f; });
    block([](int j) { return static_cast<float>(j % 3) * 7.f - 7.f; });
    if (t == DType::F16 || t == DType::BF16) {
        // Conversion corners: overflow boundary, subnormals, ties, infinities.
        for (float f : {65504.f, 65519.f, 65520.f, 1e9f, -65536.f, 6.1e-5f, 6.0e-5f, 5.96e-8f,
                        2.98e-8f, 2.99e-8f, 1e-9f, 1.00048828125f, 1.000732421875f, -0.f, INFINITY,
                        -INFINITY, 3.3895314e38f})
            v.push_back(f);
        if (t == DType::BF16)  // quiet and signalling NaNs (gguf forces them quiet)
            for (uint32_t u : {0x7fc00000u, 0xffc12345u, 0x7f800001u, 0xff80ffffu})
                v.push_back(std::bit_cast<float>(u));
        std::mt19937 rng(seed + 1);
        std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
        while (v.size() % 32 != 0 || v.size() < 32 * 600) {
            const uint32_t u = bits(rng);
            if ((u & 0x7f800000u) == 0x7f800000u) continue;  // no NaN/inf from random bits
            v.push_back(std::bit_cast<float>(u));
        }
    }
    return v;
}

bool same_float(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

class GgufReference : public ::testing::Test {
  protected:
    struct Result {
        std::vector<uint8_t> input;  // blocks (dequantize) or floats (quantize)
        std::vector<uint8_t> expected;
    };
    static inline std::map<std::string, Result> results;
    static inline std::string failure;

    static void SetUpTestSuite() {
        if (tandem::test::python().empty()) {
            failure = "no Python with the gguf package (run packaging/install-deps.sh)";
            return;
        }
        const auto dir = tandem::test::temp_dir("quant-gguf");
        std::ofstream jobs(dir / "jobs.txt");
        uint32_t seed = 1000;
        for (const auto& c : dequant_cases()) {
            const std::string key = std::string("dequantize-") + c.gguf_name;
            results[key].input = random_blocks(c, seed++);
            write_file(dir / (key + ".in"), results[key].input);
            jobs << "dequantize " << c.gguf_name << ' ' << (dir / (key + ".in")).string() << ' '
                 << (dir / (key + ".out")).string() << '\n';
        }
        for (const auto& c : quant_cases()) {
            const std::string key = std::string("quantize-") + c.gguf_name;
            const auto x = quant_input(c.type, seed++);
            results[key].input.resize(x.size() * 4);
            std::memcpy(results[key].input.data(), x.data(), x.size() * 4);
            write_file(dir / (key + ".in"), x);
            jobs << "quantize " << c.gguf_name << ' ' << (dir / (key + ".in")).string() << ' '
                 << (dir / (key + ".out")).string() << '\n';
        }
        jobs.close();
        failure = run_gguf_reference(dir / "jobs.txt");
        if (!failure.empty()) return;
        for (auto& [key, r] : results) r.expected = read_file(dir / (key + ".out"));
    }

    void SetUp() override {
        if (tandem::test::python().empty()) GTEST_SKIP() << failure;
        ASSERT_TRUE(failure.empty()) << failure;
    }
};

TEST_F(GgufReference, DequantizeMatchesBitForBit) {
    for (const auto& c : dequant_cases()) {
        SCOPED_TRACE(c.gguf_name);
        const auto& r = results.at(std::string("dequantize-") + c.gguf_name);
        const auto& tr = dtype_traits(c.type);
        const int64_t n = static_cast<int64_t>(r.input.size() / tr.block_bytes * tr.block_elems);
        const auto expected = as_floats(r.expected);
        ASSERT_EQ(expected.size(), static_cast<size_t>(n));
        std::vector<float> got(static_cast<size_t>(n));
        dequantize_row(c.type, r.input.data(), got.data(), n);
        int mismatches = 0;
        for (int64_t i = 0; i < n && mismatches < 5; ++i) {
            if (!same_float(got[i], expected[i])) {
                ++mismatches;
                ADD_FAILURE() << "element " << i << ": ours " << got[i] << " gguf " << expected[i];
            }
        }
    }
}

TEST_F(GgufReference, QuantizeMatchesBitForBit) {
    for (const auto& c : quant_cases()) {
        SCOPED_TRACE(c.gguf_name);
        const auto& r = results.at(std::string("quantize-") + c.gguf_name);
        const auto x = as_floats(r.input);
        const int64_t n = static_cast<int64_t>(x.size());
        std::vector<uint8_t> got(row_bytes(c.type, static_cast<uint64_t>(n)));
        quantize_row(c.type, x.data(), got.data(), n);
        ASSERT_EQ(got.size(), r.expected.size());
        const size_t bb = dtype_traits(c.type).block_bytes;
        int mismatches = 0;
        for (size_t i = 0; i < got.size() && mismatches < 5; ++i) {
            if (got[i] != r.expected[i]) {
                ++mismatches;
                ADD_FAILURE() << "byte " << i << " (block " << i / bb << "): ours " << int(got[i])
                              << " gguf " << int(r.expected[i]);
            }
        }
        // q8_0 is also the activation format: its SIMD quantisers must give the same bytes.
        if (c.type == DType::Q8_0) {
            for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
                if (!isa_supported(isa)) continue;
                std::vector<uint8_t> act(got.size());
                quantize_act_row(DType::Q8_0, x.data(), act.data(), n, isa);
                EXPECT_EQ(act, r.expected) << "activation quantiser, " << isa_name(isa);
            }
        }
    }
}

}  // namespace
}  // namespace tandem::quant::test
