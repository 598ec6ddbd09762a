// Chunked perplexity (see perplexity.h for the scoring rule and why it is llama.cpp's).
#include "tandem/engine/perplexity.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "tandem/common/error.h"

namespace tandem::engine {

namespace {

// Negative log-probability of `target` under softmax(logits): max subtracted first, the sum of
// exponentials in double (a 262K vocabulary loses digits in a float sum).
double nll_of(const float* logits, int64_t n_vocab, int32_t target) {
    const float mx = *std::max_element(logits, logits + n_vocab);
    double sum = 0;
    for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - mx);
    return -(double(logits[target]) - mx - std::log(sum));
}

// The scored half of a chunk runs in pieces of this many tokens: all-position logits of a
// 262K-vocabulary model cost 1 MiB per token.
constexpr int64_t kScorePiece = 32;

}  // namespace

PerplexityResult perplexity(Engine& engine, std::span<const int32_t> tokens,
                            const PerplexityOptions& o,
                            const std::function<void(int64_t, double)>& on_chunk) {
    const int64_t n_ctx = o.n_ctx;
    if (n_ctx < 4 || n_ctx > engine.n_ctx())
        throw Error("perplexity: chunk size " + std::to_string(n_ctx) +
                    " must be between 4 and the engine's context (" +
                    std::to_string(engine.n_ctx()) + ")");
    const auto n_tokens = static_cast<int64_t>(tokens.size());
    if (n_tokens < 2 * n_ctx)
        throw Error("perplexity: the text has " + std::to_string(n_tokens) +
                    " tokens; a chunk size of " + std::to_string(n_ctx) + " needs at least " +
                    std::to_string(2 * n_ctx) + " (lower --ctx or give more text)");
    const int64_t n_vocab = engine.n_vocab();
    for (int32_t t : tokens)
        if (t < 0 || t >= n_vocab)
            throw Error("perplexity: token id " + std::to_string(t) + " outside the vocabulary");
    int64_t n_chunks = n_tokens / n_ctx;
    if (o.max_chunks > 0) n_chunks = std::min(n_chunks, o.max_chunks);

    const int64_t first = n_ctx / 2;
    PerplexityResult r;
    double nll = 0, nll2 = 0;
    std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
    std::vector<float> logits;
    for (int64_t c = 0; c < n_chunks; ++c) {
        std::copy_n(tokens.begin() + c * n_ctx, n_ctx, chunk.begin());
        if (o.bos_id >= 0) chunk[0] = o.bos_id;
        engine.clear();
        // Context half: only the cache matters.
        engine.decode(std::span(chunk).first(static_cast<size_t>(first)), logits, false);
        // Scored half: logits at position p predict chunk[p + 1], for p in [first, n_ctx - 2].
        for (int64_t p0 = first; p0 < n_ctx - 1; p0 += kScorePiece) {
            const int64_t n = std::min(kScorePiece, n_ctx - 1 - p0);
            engine.decode(std::span(chunk).subspan(static_cast<size_t>(p0), static_cast<size_t>(n)),
                          logits, true);
            for (int64_t j = 0; j < n; ++j) {
                const double v = nll_of(logits.data() + j * n_vocab, n_vocab, chunk[p0 + j + 1]);
                nll += v;
                nll2 += v * v;
                ++r.n_scored;
            }
        }
        r.by_chunk.push_back(std::exp(nll / double(r.n_scored)));
        if (on_chunk) on_chunk(c, r.by_chunk.back());
    }
    engine.clear();
    r.n_chunks = n_chunks;
    r.nll_mean = nll / double(r.n_scored);
    r.perplexity = std::exp(r.nll_mean);
    const double var = nll2 / double(r.n_scored) - r.nll_mean * r.nll_mean;
    r.nll_stderr = var > 0 && r.n_scored > 1 ? std::sqrt(var / double(r.n_scored - 1)) : 0.0;
    return r;
}

}  // namespace tandem::engine
