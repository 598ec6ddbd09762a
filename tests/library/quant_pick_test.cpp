// Quant names as they appear in real Hugging Face GGUF repositories, split grouping and specs.
#include <gtest/gtest.h>

#include "tandem/common/error.h"
#include "tandem/library/quant_pick.h"

using namespace tandem::library;

TEST(QuantPick, QuantFromRealFileNames) {
    EXPECT_EQ(quant_from_filename("Llama-3.2-1B-Instruct-Q4_K_M.gguf"), "Q4_K_M");
    EXPECT_EQ(quant_from_filename("qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf"), "Q4_K_M");
    EXPECT_EQ(quant_from_filename("gemma-3-27b-it-UD-Q4_K_XL.gguf"), "UD-Q4_K_XL");
    EXPECT_EQ(quant_from_filename("Meta-Llama-3-8B-Instruct.IQ4_XS.gguf"), "IQ4_XS");
    EXPECT_EQ(quant_from_filename("Q4_K_M/DeepSeek-R1-Q4_K_M-00003-of-00009.gguf"), "Q4_K_M");
    EXPECT_EQ(quant_from_filename("Qwen3-30B-A3B-Q8_0.gguf"), "Q8_0");
    EXPECT_EQ(quant_from_filename("Phi-3-mini-4k-instruct-fp16.gguf"), "FP16");
    EXPECT_EQ(quant_from_filename("model-bf16.gguf"), "BF16");
    EXPECT_EQ(quant_from_filename("gpt-oss-20b-MXFP4.gguf"), "MXFP4");
    EXPECT_EQ(quant_from_filename("tinyllama-1.1b.gguf"), std::nullopt);
}

namespace {
std::vector<RepoFile> listing() {
    return {
        {"README.md", 100, ""},
        {"Model-Q8_0.gguf", 800, "a"},
        {"Q4_K_M/Model-Q4_K_M-00002-of-00003.gguf", 20, "c"},
        {"Model-IQ4_XS.gguf", 400, "b"},
        {"Q4_K_M/Model-Q4_K_M-00001-of-00003.gguf", 10, "d"},
        {"mmproj-Model-F16.gguf", 50, "e"},
        {"Q4_K_M/Model-Q4_K_M-00003-of-00003.gguf", 30, "f"},
    };
}
}  // namespace

TEST(QuantPick, GroupsSplitPartsInOrderAndLeavesOutProjectors) {
    auto groups = group_gguf_files(listing());
    ASSERT_EQ(groups.size(), 3u);
    const auto& q4 = pick_quant(groups, "q4_k_m", "org/Model-GGUF");
    ASSERT_EQ(q4.files.size(), 3u);
    EXPECT_EQ(q4.split_count, 3u);
    EXPECT_EQ(q4.files[0].path, "Q4_K_M/Model-Q4_K_M-00001-of-00003.gguf");
    EXPECT_EQ(q4.files[2].path, "Q4_K_M/Model-Q4_K_M-00003-of-00003.gguf");
    EXPECT_EQ(q4.total_size(), 60u);
    EXPECT_EQ(pick_quant(groups, "", "org/Model-GGUF").quant, "Q4_K_M");  // the default
    EXPECT_EQ(pick_quant(groups, "IQ4_XS", "org/Model-GGUF").files[0].sha256, "b");
}

TEST(QuantPick, MissingQuantOrPartIsAClearError) {
    auto files = listing();
    try {
        pick_quant(group_gguf_files(files), "Q2_K", "org/Model-GGUF");
        FAIL();
    } catch (const tandem::Error& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("Q2_K"), std::string::npos) << m;
        EXPECT_NE(m.find("IQ4_XS, Q4_K_M, Q8_0"), std::string::npos) << m;
    }
    files.erase(files.begin() + 2);  // part 2 of 3
    try {
        pick_quant(group_gguf_files(files), "Q4_K_M", "org/Model-GGUF");
        FAIL();
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("2 of 3 parts"), std::string::npos) << e.what();
    }
    // Several quants and none named: the user has to choose (no Q4_K_M to fall back on).
    std::vector<RepoFile> two{{"a-Q8_0.gguf", 1, ""}, {"a-Q6_K.gguf", 1, ""}};
    EXPECT_THROW(pick_quant(group_gguf_files(two), "", "o/a"), tandem::Error);
    EXPECT_EQ(pick_quant(group_gguf_files({{"only.gguf", 1, ""}}), "", "o/a").quant, "only");
}

TEST(QuantPick, ModelSpecs) {
    auto a = ModelSpec::parse("bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M");
    EXPECT_EQ(a.repo, "bartowski/Llama-3.2-1B-Instruct-GGUF");
    EXPECT_EQ(a.quant, "Q4_K_M");
    EXPECT_EQ(a.revision, "main");
    auto b = ModelSpec::parse("hf.co/org/m@v1.0:iq4_xs");
    EXPECT_EQ(b.repo, "org/m");
    EXPECT_EQ(b.revision, "v1.0");
    EXPECT_EQ(b.quant, "iq4_xs");
    EXPECT_EQ(ModelSpec::parse("org/m").quant, "");
    EXPECT_THROW(ModelSpec::parse("llama"), tandem::Error);
    EXPECT_THROW(ModelSpec::parse("a/b/c:Q4_0"), tandem::Error);
    EXPECT_THROW(ModelSpec::parse("/b"), tandem::Error);
}
