#pragma once
// The step sequence every tensor-parallel test runs on a split engine and on the unsplit one:
// prefill 6 tokens (every position's logits), decode 4 more one at a time, then 8 greedy tokens.
#include <algorithm>
#include <span>
#include <vector>

#include "tandem/engine/engine.h"

namespace tandem::test {

inline const std::vector<int32_t> kIds = {1, 17, 300, 42, 42, 7, 999, 3, 250, 11};

inline int argmax(const float* v, int64_t n) {
    return static_cast<int>(std::max_element(v, v + n) - v);
}

// All logits (6 + 4 rows) and the greedy tokens.
inline void run_engine(engine::Engine& e, std::vector<float>& logits,
                       std::vector<int32_t>& greedy) {
    e.decode(std::span(kIds).first(6), logits, true);
    std::vector<float> step;
    for (size_t t = 6; t < kIds.size(); ++t) {
        e.decode(std::span(kIds).subspan(t, 1), step);
        logits.insert(logits.end(), step.begin(), step.end());
    }
    greedy.clear();
    for (int g = 0; g < 8; ++g) {
        greedy.push_back(argmax(step.data(), e.n_vocab()));
        e.decode(std::span(greedy).last(1), step);
    }
}

}  // namespace tandem::test
