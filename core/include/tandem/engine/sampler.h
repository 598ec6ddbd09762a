#pragma once
// Picks the next token from logits: repetition/presence/frequency penalties over the recent
// history, then greedy (temperature <= 0) or temperature + top-k + min-p + top-p sampling with a
// seeded generator. Buffers are kept between calls (no allocation per token after the first).
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace tandem::engine {

struct SamplingParams {
    float temperature = 0.0f;     // <= 0: greedy
    int top_k = 0;                // 0: off
    float top_p = 1.0f;           // 1: off
    float min_p = 0.0f;           // 0: off; keeps tokens with p >= min_p * p_max
    float repeat_penalty = 1.0f;  // 1: off; divides positive / multiplies negative logits
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    int penalty_last_n = 64;  // history window the penalties look at
    uint64_t seed = 0;
};

class Sampler {
  public:
    explicit Sampler(SamplingParams params = {});
    const SamplingParams& params() const { return p_; }
    // history: tokens so far (prompt and generated), most recent last.
    int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

  private:
    SamplingParams p_;
    std::mt19937_64 rng_;
    std::vector<float> work_;
    std::vector<std::pair<float, int32_t>> cand_;
    std::vector<std::pair<int32_t, int32_t>> counts_;
};

}  // namespace tandem::engine
