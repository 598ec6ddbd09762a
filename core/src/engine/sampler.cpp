#include "tandem/engine/sampler.h"

#include <algorithm>
#include <cmath>

#include "tandem/common/error.h"

namespace tandem::engine {

Sampler::Sampler(SamplingParams params) : p_(params), rng_(params.seed) {
    if (p_.top_p <= 0.0f || p_.top_p > 1.0f) throw Error("sampler: top_p must be in (0, 1]");
    if (p_.min_p < 0.0f || p_.min_p >= 1.0f) throw Error("sampler: min_p must be in [0, 1)");
    if (p_.top_k < 0) throw Error("sampler: top_k must be >= 0");
    if (p_.repeat_penalty <= 0.0f) throw Error("sampler: repeat_penalty must be > 0");
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
    if (logits.empty()) throw Error("sampler: no logits");
    const auto n_vocab = static_cast<int32_t>(logits.size());
    const float* l = logits.data();
    const bool penalize =
        p_.repeat_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f;
    if (penalize && !history.empty()) {
        work_.assign(logits.begin(), logits.end());
        const size_t n =
            std::min(history.size(), static_cast<size_t>(std::max(p_.penalty_last_n, 0)));
        counts_.clear();
        for (int32_t id : history.subspan(history.size() - n)) {
            if (id < 0 || id >= n_vocab) continue;
            auto it = std::find_if(counts_.begin(), counts_.end(),
                                   [&](auto& c) { return c.first == id; });
            if (it == counts_.end())
                counts_.emplace_back(id, 1);
            else
                ++it->second;
        }
        for (auto [id, count] : counts_) {
            float& v = work_[static_cast<size_t>(id)];
            v = v > 0 ? v / p_.repeat_penalty : v * p_.repeat_penalty;
            v -= p_.presence_penalty + p_.frequency_penalty * static_cast<float>(count);
        }
        l = work_.data();
    }
    if (p_.temperature <= 0.0f)  // first maximum, as argmax in numpy/torch
        return static_cast<int32_t>(std::max_element(l, l + n_vocab) - l);

    cand_.resize(static_cast<size_t>(n_vocab));
    for (int32_t i = 0; i < n_vocab; ++i)
        cand_[static_cast<size_t>(i)] = {l[i] / p_.temperature, i};
    auto by_logit = [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    size_t n = cand_.size();
    if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < n) {
        std::nth_element(cand_.begin(), cand_.begin() + p_.top_k, cand_.end(), by_logit);
        n = static_cast<size_t>(p_.top_k);
    }
    float mx = -INFINITY;
    for (size_t i = 0; i < n; ++i) mx = std::max(mx, cand_[i].first);
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += (cand_[i].first = std::exp(cand_[i].first - mx));
    // min-p: relative to the most likely token (whose weight is exp(0) = 1).
    if (p_.min_p > 0.0f) {
        auto end = std::partition(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(n),
                                  [&](const auto& c) { return c.first >= p_.min_p; });
        n = static_cast<size_t>(end - cand_.begin());
        sum = 0;
        for (size_t i = 0; i < n; ++i) sum += cand_[i].first;
    }
    if (p_.top_p < 1.0f) {
        std::sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(n), by_logit);
        double acc = 0;
        size_t keep = n;
        for (size_t i = 0; i < n; ++i) {
            acc += cand_[i].first;
            if (acc >= p_.top_p * sum) {
                keep = i + 1;
                break;
            }
        }
        n = keep;
        sum = acc;
    }
    std::uniform_real_distribution<double> u(0.0, sum);
    double r = u(rng_), acc = 0;
    for (size_t i = 0; i < n; ++i) {
        acc += cand_[i].first;
        if (r < acc) return cand_[i].second;
    }
    return cand_[n - 1].second;
}

}  // namespace tandem::engine
