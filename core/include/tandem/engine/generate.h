#pragma once
// The generation loop: prompt (reusing the cached prefix), then sample / stream / decode until
// max_tokens, an end-of-generation token, a stop string, the callback or a cancel flag says stop.
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/engine/engine.h"
#include "tandem/engine/sampler.h"
#include "tandem/tokenizer/tokenizer.h"

namespace tandem::engine {

enum class StopReason { Length, EndOfGeneration, StopString, Cancelled, Callback };
const char* stop_reason_name(StopReason r);

struct GenerateOptions {
    int max_tokens = 256;
    SamplingParams sampling;
    bool stop_at_eog = true;                // EOS/EOT/... of the vocabulary (or eog_ids)
    std::vector<int32_t> eog_ids;           // used when there is no tokenizer
    std::vector<std::string> stop_strings;  // never streamed; the text ends before them
    // Streamed text: whole UTF-8 characters, stop strings held back. Return false to stop.
    std::function<bool(std::string_view text)> on_text;
    std::function<void(int32_t id)> on_token;
    const std::atomic<bool>* cancel = nullptr;
};

struct GenerateResult {
    std::vector<int32_t> ids;  // generated ids (an end-of-generation token is not included)
    std::string text;          // decoded text, cut before a stop string
    StopReason stop = StopReason::Length;
    int64_t n_prompt = 0, n_reused = 0;  // prompt tokens, of which taken from the cache
    double prefill_seconds = 0, decode_seconds = 0;
    int64_t n_decoded = 0;  // decode steps run (tokens/s = n_decoded / decode_seconds)
};

// tok may be null (ids only; stop strings and on_text then unused).
GenerateResult generate(Engine& engine, std::span<const int32_t> prompt,
                        const tokenizer::Tokenizer* tok, const GenerateOptions& options);

}  // namespace tandem::engine
