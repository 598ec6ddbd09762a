// Sampler: greedy, seeded reproducibility, and the distributions temperature/top-k/top-p/min-p
// and the penalties must produce (checked by frequencies over many draws against the closed
// form).
#include <cmath>

#include <gtest/gtest.h>

#include "tandem/common/error.h"
#include "tandem/engine/sampler.h"

namespace tandem::engine {
namespace {

std::vector<float> log_probs(std::vector<double> p) {
    std::vector<float> l;
    for (double v : p) l.push_back(static_cast<float>(std::log(v)));
    return l;
}

std::vector<double> frequencies(SamplingParams sp, const std::vector<float>& logits, int n = 40000,
                                std::vector<int32_t> history = {}) {
    Sampler s(sp);
    std::vector<double> f(logits.size(), 0.0);
    for (int i = 0; i < n; ++i) f[static_cast<size_t>(s.sample(logits, history))] += 1.0 / n;
    return f;
}

TEST(Sampler, GreedyIsFirstArgmax) {
    Sampler s;
    std::vector<float> l = {0.1f, 2.0f, -1.0f, 2.0f};
    EXPECT_EQ(s.sample(l, {}), 1);
}

TEST(Sampler, TemperatureOneFollowsSoftmax) {
    SamplingParams sp;
    sp.temperature = 1.0f;
    auto f = frequencies(sp, log_probs({0.5, 0.3, 0.15, 0.05}));
    EXPECT_NEAR(f[0], 0.5, 0.01);
    EXPECT_NEAR(f[1], 0.3, 0.01);
    EXPECT_NEAR(f[2], 0.15, 0.01);
    EXPECT_NEAR(f[3], 0.05, 0.01);
}

TEST(Sampler, TemperatureSharpens) {
    SamplingParams sp;
    sp.temperature = 0.5f;  // p^2 renormalised: .25/.34, .09/.34 ...
    auto f = frequencies(sp, log_probs({0.5, 0.3, 0.2}));
    const double z = 0.25 + 0.09 + 0.04;
    EXPECT_NEAR(f[0], 0.25 / z, 0.01);
    EXPECT_NEAR(f[2], 0.04 / z, 0.01);
}

TEST(Sampler, TopKTopPMinP) {
    auto l = log_probs({0.4, 0.3, 0.2, 0.1});
    SamplingParams sp;
    sp.temperature = 1.0f;
    sp.top_k = 2;
    auto f = frequencies(sp, l);
    EXPECT_NEAR(f[0], 0.4 / 0.7, 0.01);
    EXPECT_EQ(f[2] + f[3], 0.0);
    sp.top_k = 0;
    sp.top_p = 0.75f;  // 0.4 + 0.3 < 0.75 <= 0.9: three tokens stay
    f = frequencies(sp, l);
    EXPECT_NEAR(f[2], 0.2 / 0.9, 0.01);
    EXPECT_EQ(f[3], 0.0);
    sp.top_p = 1.0f;
    sp.min_p = 0.6f;  // keeps p >= 0.24
    f = frequencies(sp, l);
    EXPECT_NEAR(f[0], 0.4 / 0.7, 0.01);
    EXPECT_EQ(f[2] + f[3], 0.0);
}

TEST(Sampler, SeedReproducesAndDiffers) {
    SamplingParams sp;
    sp.temperature = 1.0f;
    sp.seed = 42;
    auto l = log_probs({0.25, 0.25, 0.25, 0.25});
    Sampler a(sp), b(sp);
    std::vector<int32_t> ra, rb, rc;
    sp.seed = 43;
    Sampler c(sp);
    for (int i = 0; i < 64; ++i) {
        ra.push_back(a.sample(l, {}));
        rb.push_back(b.sample(l, {}));
        rc.push_back(c.sample(l, {}));
    }
    EXPECT_EQ(ra, rb);
    EXPECT_NE(ra, rc);
}

TEST(Sampler, PenaltiesMoveGreedyChoice) {
    std::vector<float> l = {2.0f, 1.5f, -1.0f};
    SamplingParams sp;
    sp.repeat_penalty = 1.5f;  // 2.0 / 1.5 = 1.33 < 1.5
    EXPECT_EQ(Sampler(sp).sample(l, std::vector<int32_t>{0}), 1);
    sp.repeat_penalty = 1.0f;
    sp.presence_penalty = 0.6f;  // once per distinct token: 2.0 - 0.6 < 1.5
    EXPECT_EQ(Sampler(sp).sample(l, std::vector<int32_t>{0, 0}), 1);
    sp.presence_penalty = 0.0f;
    sp.frequency_penalty = 0.2f;  // two occurrences: 2.0 - 0.4 = 1.6 > 1.5
    EXPECT_EQ(Sampler(sp).sample(l, std::vector<int32_t>{0, 0}), 0);
    sp.penalty_last_n = 1;  // only the last token counts, and it is not 0
    sp.frequency_penalty = 5.0f;
    EXPECT_EQ(Sampler(sp).sample(l, std::vector<int32_t>{0, 2}), 0);
}

TEST(Sampler, BadParametersAreErrors) {
    SamplingParams sp;
    sp.top_p = 0.0f;
    EXPECT_THROW(Sampler{sp}, Error);
    sp = {};
    sp.min_p = 1.0f;
    EXPECT_THROW(Sampler{sp}, Error);
    sp = {};
    sp.top_k = -1;
    EXPECT_THROW(Sampler{sp}, Error);
}

}  // namespace
}  // namespace tandem::engine
