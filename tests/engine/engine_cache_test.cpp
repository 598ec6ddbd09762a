// KV cache behaviour: batched prefill, incremental decode and prefix reuse give the logits of a
// single full pass; context overflow is a clear error that leaves the cache as it was.
#include <cmath>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine_fixture.h"
#include "tandem/common/error.h"

namespace tandem::test {
namespace {

std::vector<int32_t> prompt_ids(const std::string& name) {
    auto ref = fixture("hf-tiny/" + name + "/reference.json");
    std::ifstream f(*ref);
    std::string s((std::istreambuf_iterator<char>(f)), {});
    auto j = nlohmann::json::parse(s);
    return j["prompt_ids"].get<std::vector<int32_t>>();
}

TEST(EngineCache, IncrementalAndBatchedMatchOnePass) {
    for (const char* name : {"llama-tiny", "gemma3-tiny", "qwen3moe-tiny"}) {
        auto path = tiny_gguf(name);
        if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/" << name;
        auto model = engine::load_model(*path);
        const auto ids = prompt_ids(name);
        const int64_t V = model->hp.n_vocab, T = static_cast<int64_t>(ids.size());
        std::vector<float> full;
        make_engine(model)->decode(ids, full, true);

        // Prefill in batches of 7, then the rest one token at a time.
        auto e = make_engine(model, 256, DType::F32, 2, 7);
        std::vector<float> part, last;
        e->decode(std::span(ids).first(25), part, true);
        ASSERT_EQ(part.size(), size_t(25 * V));
        double worst =
            max_rel_row_error(part, std::vector<float>(full.begin(), full.begin() + 25 * V), V);
        for (int64_t t = 25; t < T; ++t) {
            e->decode(std::span(ids).subspan(t, 1), last);
            worst = std::max(
                worst,
                max_rel_row_error(
                    last, std::vector<float>(full.begin() + t * V, full.begin() + (t + 1) * V), V));
        }
        EXPECT_LT(worst, 1e-5) << name;
        EXPECT_EQ(e->n_past(), T);
    }
}

TEST(EngineCache, PrefixReuseRecomputesOnlyNewTokens) {
    auto path = tiny_gguf("qwen2-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/qwen2-tiny";
    auto model = engine::load_model(*path);
    auto ids = prompt_ids("qwen2-tiny");
    const int64_t V = model->hp.n_vocab;
    auto e = make_engine(model);
    std::vector<float> logits, ref;
    e->decode(std::span(ids).first(30), logits);
    // A second turn: the first 30 tokens are shared, then the conversation goes on differently.
    std::vector<int32_t> turn2(ids.begin(), ids.begin() + 30);
    turn2.insert(turn2.end(), {5, 6, 7});
    EXPECT_EQ(e->keep_prefix(turn2), 30u);
    e->decode(std::span(turn2).subspan(30), logits);
    make_engine(model)->decode(turn2, ref);
    EXPECT_LT(max_rel_row_error(logits, ref, V), 1e-5);
    // Same tokens again: all but the last are kept (its logits are needed).
    EXPECT_EQ(e->keep_prefix(turn2), turn2.size() - 1);
    // A different first token: nothing is kept.
    std::vector<int32_t> other = turn2;
    other[0] = (other[0] + 1) % int32_t(V);
    EXPECT_EQ(e->keep_prefix(other), 0u);
}

TEST(EngineCache, SamePromptAgainReusesTheBatchLogitsBitForBit) {
    // Q8_0: a batch of >= 4 tokens takes the quantised GEMM where the CPU has it.
    auto path = tiny_gguf("llama-tiny", DType::Q8_0);
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/llama-tiny";
    auto model = engine::load_model(*path);
    auto ids = prompt_ids("llama-tiny");
    ASSERT_GE(ids.size(), 12u);
    const std::vector<int32_t> prompt(ids.begin(), ids.begin() + 12);
    auto e = make_engine(model);
    std::vector<float> first, again, next1, next2;
    EXPECT_EQ(e->prefill(prompt, first), 0u);
    // A generated token, then the same request again: the cache is cut back to the prompt and
    // the prompt's logits are the batch's own (a lone re-run of its last token takes other
    // kernels whose sums round differently).
    const int32_t tok = 7;
    e->decode(std::span<const int32_t>(&tok, 1), next1);
    EXPECT_EQ(e->prefill(prompt, again), prompt.size());
    EXPECT_EQ(e->n_past(), int64_t(prompt.size()));
    ASSERT_EQ(again.size(), first.size());
    EXPECT_EQ(0, std::memcmp(again.data(), first.data(), first.size() * sizeof(float)));
    // The cache behind those logits is intact: the same next token gives the same logits.
    e->decode(std::span<const int32_t>(&tok, 1), next2);
    EXPECT_EQ(0, std::memcmp(next1.data(), next2.data(), next1.size() * sizeof(float)));
    // A shorter prompt drops the stored logits: its last token runs again.
    const std::vector<int32_t> shorter(prompt.begin(), prompt.begin() + 8);
    EXPECT_EQ(e->prefill(shorter, again), shorter.size() - 1);
    EXPECT_EQ(e->prefill(prompt, again), shorter.size());
    // A different prompt of the same length is not mistaken for the cached one.
    std::vector<int32_t> other = prompt;
    other.back() = (other.back() + 1) % int32_t(model->hp.n_vocab);
    EXPECT_EQ(e->prefill(other, again), prompt.size() - 1);
}

TEST(EngineCache, ContextOverflowIsAnErrorAndChangesNothing) {
    auto path = tiny_gguf("llama-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/llama-tiny";
    auto e = make_engine(engine::load_model(*path), 16);
    std::vector<int32_t> ids(12, 3);
    std::vector<float> logits;
    e->decode(ids, logits);
    try {
        e->decode(std::vector<int32_t>(5, 4), logits);
        FAIL() << "no error";
    } catch (const Error& err) {
        EXPECT_NE(std::string(err.what()).find("context full"), std::string::npos) << err.what();
    }
    EXPECT_EQ(e->n_past(), 12);
    e->decode(std::vector<int32_t>(4, 4), logits);  // exactly fills the context
    EXPECT_EQ(e->n_past(), 16);
    EXPECT_THROW(e->decode(std::vector<int32_t>{1}, logits), Error);
    EXPECT_THROW(e->decode(std::vector<int32_t>{}, logits), Error);
}

TEST(EngineCache, TokenOutsideVocabularyIsAnError) {
    auto path = tiny_gguf("llama-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/llama-tiny";
    auto e = make_engine(engine::load_model(*path));
    std::vector<float> logits;
    EXPECT_THROW(e->decode(std::vector<int32_t>{1, 1000}, logits), Error);
    EXPECT_EQ(e->n_past(), 0);
}

}  // namespace
}  // namespace tandem::test
