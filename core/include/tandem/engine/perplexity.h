#pragma once
// Perplexity of a token sequence, scored the way llama.cpp's llama-perplexity does so the two
// can be compared number for number: the tokens are cut into chunks of n_ctx, each chunk runs
// from an empty cache with its first token replaced by BOS (when the vocabulary adds one), and
// only the second half of each chunk is scored (logits at positions n_ctx/2 .. n_ctx-2 predict
// the next token), so every scored token has at least n_ctx/2 tokens of context.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tandem/engine/engine.h"

namespace tandem::engine {

struct PerplexityOptions {
    int64_t n_ctx = 512;     // tokens per chunk (the engine's context must hold them)
    int64_t max_chunks = 0;  // 0: every whole chunk of the sequence
    int32_t bos_id = -1;     // >= 0: replaces the first token of every chunk
};

struct PerplexityResult {
    double perplexity = 0;         // exp(mean negative log-likelihood)
    double nll_mean = 0;           // nats per scored token
    double nll_stderr = 0;         // standard error of nll_mean
    int64_t n_scored = 0;          // tokens scored
    int64_t n_chunks = 0;          // chunks run
    std::vector<double> by_chunk;  // running perplexity after each chunk
};

// Throws tandem::Error when the sequence holds fewer than two chunks (llama.cpp asks for
// 2 * n_ctx tokens) or n_ctx is below 4 or beyond the engine's context. on_chunk (optional) is
// called after every chunk with its index and the running perplexity.
PerplexityResult perplexity(Engine& engine, std::span<const int32_t> tokens,
                            const PerplexityOptions& options,
                            const std::function<void(int64_t, double)>& on_chunk = {});

}  // namespace tandem::engine
