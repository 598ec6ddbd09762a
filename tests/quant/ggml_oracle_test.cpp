// Our quantisers against ggml's own reference quantisers (quantize_row_*_ref), bit for bit,
// including the K-quants that the gguf package cannot quantise. ggml is not a dependency of
// Tandem: build_ggml_oracle.sh compiles ggml-quants.c from the llama-cpp-python sdist into a
// small library, and TANDEM_GGML_QUANTS_LIB names it. Without it the tests skip visibly.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "quant_test_util.h"
#include "tandem/quant/quant.h"

namespace tandem::quant::test {
namespace {

using RefQuantFn = void (*)(const float*, void*, int64_t);
using RefDequantFn = void (*)(const void*, float*, int64_t);

void* oracle() {
    static void* handle = [] {
        const char* path = std::getenv("TANDEM_GGML_QUANTS_LIB");
        return path && *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    }();
    return handle;
}

#define ORACLE_OR_SKIP()                                                   \
    if (!oracle())                                                         \
    GTEST_SKIP() << "TANDEM_GGML_QUANTS_LIB not set or not loadable (see " \
                    "tests/quant/build_ggml_oracle.sh)"

struct Case {
    DType type;
    const char* ggml_name;  // suffix of quantize_row_<name>_ref
};

// Rows of the kind the K-quant search sees in real weights, plus flat and sparse ones.
std::vector<float> oracle_input(uint32_t seed) {
    std::vector<float> x = random_row(256 * 160, seed);
    for (int j = 0; j < 256; ++j) x.push_back(0.f);
    for (int j = 0; j < 256; ++j) x.push_back(0.25f);
    for (int j = 0; j < 256; ++j) x.push_back(j % 17 == 0 ? 3.f : 0.f);
    for (int j = 0; j < 256; ++j) x.push_back(static_cast<float>(j % 32) - 15.5f);
    for (int j = 0; j < 256; ++j) x.push_back(j < 128 ? 1e-4f * static_cast<float>(j) : -50.f);
    return x;
}

void expect_same_bytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                       size_t block_bytes) {
    ASSERT_EQ(got.size(), want.size());
    int shown = 0;
    size_t bad_blocks = 0, last_bad = SIZE_MAX;
    for (size_t i = 0; i < got.size(); ++i) {
        if (got[i] == want[i]) continue;
        if (i / block_bytes != last_bad) ++bad_blocks, last_bad = i / block_bytes;
        if (shown++ < 5)
            ADD_FAILURE() << "byte " << i << " (block " << i / block_bytes << " offset "
                          << i % block_bytes << "): ours " << int(got[i]) << " ggml "
                          << int(want[i]);
    }
    EXPECT_EQ(bad_blocks, 0u) << "of " << got.size() / block_bytes << " blocks";
}

TEST(GgmlOracle, WeightQuantizersMatchBitForBit) {
    ORACLE_OR_SKIP();
    const Case cases[] = {{DType::Q4_0, "q4_0"}, {DType::Q4_1, "q4_1"}, {DType::Q5_0, "q5_0"},
                          {DType::Q5_1, "q5_1"}, {DType::Q8_0, "q8_0"}, {DType::Q4_K, "q4_K"},
                          {DType::Q5_K, "q5_K"}, {DType::Q6_K, "q6_K"}};
    uint32_t seed = 77;
    for (const auto& c : cases) {
        SCOPED_TRACE(c.ggml_name);
        const std::string sym = std::string("quantize_row_") + c.ggml_name + "_ref";
        auto ref = reinterpret_cast<RefQuantFn>(dlsym(oracle(), sym.c_str()));
        ASSERT_NE(ref, nullptr) << sym;
        const auto x = oracle_input(seed++);
        const auto n = static_cast<int64_t>(x.size());
        std::vector<uint8_t> want(row_bytes(c.type, static_cast<uint64_t>(n)));
        std::vector<uint8_t> got(want.size());
        ref(x.data(), want.data(), n);
        quantize_row(c.type, x.data(), got.data(), n);
        expect_same_bytes(got, want, dtype_traits(c.type).block_bytes);
    }
}

TEST(GgmlOracle, ActivationQuantizersMatchBitForBit) {
    ORACLE_OR_SKIP();
    const auto x = oracle_input(5);
    const auto n = static_cast<int64_t>(x.size());
    struct Act {
        DType type;
        const char* sym;
        void (*ours)(const float*, void*, int64_t);
    } acts[] = {{DType::Q8_0, "quantize_row_q8_0_ref", quantize_row_q8_0},
                {DType::Q8_1, "quantize_row_q8_1_ref", quantize_row_q8_1},
                {DType::Q8_K, "quantize_row_q8_K_ref", quantize_row_q8_K}};
    for (const auto& a : acts) {
        SCOPED_TRACE(a.sym);
        auto ref = reinterpret_cast<RefQuantFn>(dlsym(oracle(), a.sym));
        ASSERT_NE(ref, nullptr);
        std::vector<uint8_t> want(row_bytes(a.type, static_cast<uint64_t>(n))), got(want.size());
        ref(x.data(), want.data(), n);
        a.ours(x.data(), got.data(), n);
        expect_same_bytes(got, want, dtype_traits(a.type).block_bytes);
    }
}

TEST(GgmlOracle, KQuantDequantizersMatchBitForBit) {
    ORACLE_OR_SKIP();
    // Blocks made by ggml's own quantisers (so every field is one ggml writes).
    const Case cases[] = {{DType::Q2_K, "q2_K"},
                          {DType::Q3_K, "q3_K"},
                          {DType::Q4_K, "q4_K"},
                          {DType::Q5_K, "q5_K"},
                          {DType::Q6_K, "q6_K"}};
    for (const auto& c : cases) {
        SCOPED_TRACE(c.ggml_name);
        auto q = reinterpret_cast<RefQuantFn>(
            dlsym(oracle(), (std::string("quantize_row_") + c.ggml_name + "_ref").c_str()));
        auto dq = reinterpret_cast<RefDequantFn>(
            dlsym(oracle(), (std::string("dequantize_row_") + c.ggml_name).c_str()));
        ASSERT_TRUE(q && dq);
        const auto x = oracle_input(9);
        const auto n = static_cast<int64_t>(x.size());
        std::vector<uint8_t> blocks(row_bytes(c.type, static_cast<uint64_t>(n)));
        q(x.data(), blocks.data(), n);
        std::vector<float> want(x.size()), got(x.size());
        dq(blocks.data(), want.data(), n);
        dequantize_row(c.type, blocks.data(), got.data(), n);
        for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
                << "element " << i << ": ours " << got[i] << " ggml " << want[i];
    }
}

}  // namespace
}  // namespace tandem::quant::test
