// The generation loop on llama-tiny (greedy continuation known from the fixture): stop at
// end-of-generation ids, max tokens, cancel, stop strings never streamed, streaming in whole UTF-8
// characters, and prefix reuse on the next turn. The vocabulary is made up for the test: byte-level
// BPE tokens spelling "w<id>|", except two that are the two bytes of "é".
#include <algorithm>
#include <atomic>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine_fixture.h"
#include "tandem/engine/generate.h"

namespace tandem::test {
namespace {

struct Tiny {
    std::shared_ptr<engine::Model> model;
    std::vector<int32_t> prompt, greedy;
};

std::optional<Tiny> load_tiny() {
    auto path = tiny_gguf("llama-tiny");
    auto ref = fixture("hf-tiny/llama-tiny/reference.json");
    if (!path || !ref) return std::nullopt;
    std::ifstream f(*ref);
    auto j = nlohmann::json::parse(std::string((std::istreambuf_iterator<char>(f)), {}));
    return Tiny{engine::load_model(*path), j["prompt_ids"].get<std::vector<int32_t>>(),
                j["greedy_continuation_ids"].get<std::vector<int32_t>>()};
}

// Token i spells "w<i>|"; byte-level BPE writes bytes 0xC3 and 0xA9 as U+00C3 and U+00A9.
tokenizer::Tokenizer made_up_tokenizer(int32_t n, int32_t lead, int32_t trail) {
    tokenizer::Vocab v;
    v.model = tokenizer::ModelKind::Bpe;
    for (int32_t i = 0; i < n; ++i) v.tokens.push_back("w" + std::to_string(i) + "|");
    v.tokens[lead] = "\xC3\x83";   // U+00C3 -> byte C3
    v.tokens[trail] = "\xC2\xA9";  // U+00A9 -> byte A9
    v.types.assign(v.tokens.size(), tokenizer::TokenType::Normal);
    return tokenizer::Tokenizer(std::move(v));
}

TEST(Generate, GreedyMatchesFixtureAndStopsAtLimits) {
    auto t = load_tiny();
    if (!t) GTEST_SKIP() << "fixture not found: hf-tiny/llama-tiny";
    auto e = make_engine(t->model);
    engine::GenerateOptions o;
    o.max_tokens = 24;
    std::vector<int32_t> streamed;
    o.on_token = [&](int32_t id) { streamed.push_back(id); };
    auto r = engine::generate(*e, t->prompt, nullptr, o);
    EXPECT_EQ(r.ids, t->greedy);
    EXPECT_EQ(streamed, t->greedy);
    EXPECT_EQ(r.stop, engine::StopReason::Length);
    EXPECT_EQ(r.n_decoded, 23);

    // End of generation: the first greedy token from the 4th on that is new is declared EOG.
    size_t k = 3;
    while (std::find(t->greedy.begin(), t->greedy.begin() + k, t->greedy[k]) !=
           t->greedy.begin() + k)
        ++k;
    o.eog_ids = {t->greedy[k]};
    r = engine::generate(*e, t->prompt, nullptr, o);
    EXPECT_EQ(r.stop, engine::StopReason::EndOfGeneration);
    EXPECT_EQ(r.ids, std::vector<int32_t>(t->greedy.begin(), t->greedy.begin() + k));
    // The prompt was cached by the previous call, with its batch's logits: nothing runs again.
    EXPECT_EQ(r.n_reused, static_cast<int64_t>(t->prompt.size()));

    std::atomic<bool> cancel{true};
    o.cancel = &cancel;
    r = engine::generate(*e, t->prompt, nullptr, o);
    EXPECT_EQ(r.stop, engine::StopReason::Cancelled);
    EXPECT_TRUE(r.ids.empty());
}

TEST(Generate, StopStringsAreNeverStreamedAndUtf8StaysWhole) {
    auto t = load_tiny();
    if (!t) GTEST_SKIP() << "fixture not found: hf-tiny/llama-tiny";
    const auto& g = t->greedy;  // 241 817 996 996 315 ...
    auto tok = made_up_tokenizer(static_cast<int32_t>(t->model->hp.n_vocab), g[0], g[1]);
    auto e = make_engine(t->model);
    engine::GenerateOptions o;
    o.max_tokens = 24;
    const std::string w2 = "w" + std::to_string(g[2]) + "|", w4 = "w" + std::to_string(g[4]) + "|";
    ASSERT_EQ(g[2], g[3]);  // the fixture's continuation: 241 817 996 996 315
    // A decoy sharing a prefix with the text, and one that matches across tokens 4 and 5.
    o.stop_strings = {w2 + w2.substr(0, 2) + "nothing", w2 + w4.substr(0, 3)};
    std::vector<std::string> chunks;
    o.on_text = [&](std::string_view s) {
        chunks.emplace_back(s);
        return true;
    };
    auto r = engine::generate(*e, t->prompt, &tok, o);
    EXPECT_EQ(r.stop, engine::StopReason::StopString);
    EXPECT_EQ(r.text, "\xC3\xA9" + w2);  // "é" then token 3; cut before the stop string
    std::string all;
    for (const auto& c : chunks) {
        all += c;
        EXPECT_NE(static_cast<unsigned char>(c.back()), 0xC3u) << "a chunk ends inside a character";
    }
    EXPECT_EQ(all, r.text);

    // The callback can stop generation.
    o.stop_strings.clear();
    int calls = 0;
    std::string first;
    o.on_text = [&](std::string_view c) {
        if (calls == 0) first = c;
        return ++calls < 2;
    };
    r = engine::generate(*e, t->prompt, &tok, o);
    EXPECT_EQ(r.stop, engine::StopReason::Callback);
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(first, "\xC3\xA9");  // the lone lead byte of token 1 waited for token 2
}

}  // namespace
}  // namespace tandem::test
