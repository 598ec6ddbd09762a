#include "tandem/engine/generate.h"

#include <algorithm>
#include <chrono>

#include "tandem/common/error.h"

namespace tandem::engine {

const char* stop_reason_name(StopReason r) {
    switch (r) {
        case StopReason::Length:
            return "length";
        case StopReason::EndOfGeneration:
            return "eog";
        case StopReason::StopString:
            return "stop-string";
        case StopReason::Cancelled:
            return "cancelled";
        case StopReason::Callback:
            return "callback";
    }
    return "?";
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// Length of the longest prefix of s that ends on a whole UTF-8 character.
size_t complete_utf8(std::string_view s) {
    size_t i = s.size(), back = 0;
    while (i > 0 && back < 4) {
        const auto c = static_cast<unsigned char>(s[i - 1]);
        if ((c & 0xC0) != 0x80) {  // a lead byte (or ASCII): is its sequence complete?
            const size_t need = c < 0x80         ? 1
                                : (c >> 5) == 6  ? 2
                                : (c >> 4) == 14 ? 3
                                : (c >> 3) == 30 ? 4
                                                 : 1;
            return back + 1 >= need ? s.size() : i - 1;
        }
        --i;
        ++back;
    }
    return s.size();
}

}  // namespace

GenerateResult generate(Engine& engine, std::span<const int32_t> prompt,
                        const tokenizer::Tokenizer* tok, const GenerateOptions& o) {
    if (prompt.empty()) throw Error("generate: empty prompt");
    GenerateResult r;
    r.n_prompt = static_cast<int64_t>(prompt.size());
    Sampler sampler(o.sampling);
    std::vector<int32_t> history(prompt.begin(), prompt.end());
    history.reserve(prompt.size() + static_cast<size_t>(std::max(o.max_tokens, 0)));
    r.ids.reserve(static_cast<size_t>(std::max(o.max_tokens, 0)));
    std::vector<float> logits;

    auto t0 = Clock::now();
    r.n_reused = static_cast<int64_t>(engine.prefill(prompt, logits));
    r.prefill_seconds = seconds_since(t0);

    auto is_eog = [&](int32_t id) {
        if (tok) return tok->vocab().is_eog(id);
        return std::find(o.eog_ids.begin(), o.eog_ids.end(), id) != o.eog_ids.end();
    };
    size_t max_stop = 0;
    for (const auto& s : o.stop_strings) max_stop = std::max(max_stop, s.size());
    size_t streamed = 0;  // bytes of r.text already given to on_text
    auto stream = [&](bool final) -> bool {
        if (!o.on_text) return true;
        size_t end = r.text.size();
        if (!final && max_stop > 1) end = end > max_stop - 1 ? end - (max_stop - 1) : 0;
        if (end <= streamed) return true;
        std::string_view chunk = std::string_view(r.text).substr(streamed, end - streamed);
        if (!final) chunk = chunk.substr(0, complete_utf8(chunk));
        if (chunk.empty()) return true;
        const size_t safe = streamed + chunk.size();
        bool go_on = o.on_text(chunk);
        streamed = safe;
        return go_on;
    };

    auto t1 = Clock::now();
    for (int i = 0; i < o.max_tokens; ++i) {
        if (o.cancel && o.cancel->load()) {
            r.stop = StopReason::Cancelled;
            break;
        }
        const int32_t id = sampler.sample(logits, history);
        if (o.stop_at_eog && is_eog(id)) {
            r.stop = StopReason::EndOfGeneration;
            break;
        }
        r.ids.push_back(id);
        history.push_back(id);
        if (o.on_token) o.on_token(id);
        if (tok) {
            const size_t before = r.text.size();
            r.text += tok->token_to_piece(id, false);
            bool hit = false;
            for (const auto& s : o.stop_strings) {
                if (s.empty()) continue;
                // Only a match that ends in the new piece can be new.
                size_t from = before >= s.size() ? before - s.size() + 1 : 0;
                size_t at = r.text.find(s, from);
                if (at != std::string::npos) {
                    r.text.resize(at);
                    hit = true;
                }
            }
            if (hit) {
                r.stop = StopReason::StopString;
                break;
            }
            if (!stream(false)) {
                r.stop = StopReason::Callback;
                break;
            }
        }
        if (i + 1 == o.max_tokens) break;  // the last token need not run
        engine.decode(std::span<const int32_t>(&r.ids.back(), 1), logits);
        ++r.n_decoded;
    }
    if (tok) stream(true);
    r.decode_seconds = seconds_since(t1);
    return r;
}

}  // namespace tandem::engine
