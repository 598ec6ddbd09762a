#include "tandem/engine/engine.h"

#include <algorithm>

#include "tandem/common/error.h"

namespace tandem::engine {

Engine::Engine(std::shared_ptr<const Model> model, std::unique_ptr<Backend> backend,
               EngineOptions options)
    : model_(std::move(model)), backend_(std::move(backend)) {
    if (!model_ || !backend_) throw Error("engine: model and backend are required");
    cache_.n_ctx = options.n_ctx > 0 ? options.n_ctx : model_->hp.n_ctx_train;
    cache_.kv_type = options.kv_type;
    n_batch_ = std::max<int64_t>(1, std::min(options.n_batch, cache_.n_ctx));
    // The model (held by this engine) keeps the mapping alive, so backends may use it in place.
    for (const Weight* w : model_->weights()) {
        if (!w->data)
            throw Error("engine: weight '" + w->name + "' has no data (a layout-only model)");
        backend_->upload_weight(w->slot, WeightDesc{w->name, w->type, w->ne, w->data, w->nbytes},
                                true);
    }
    backend_->allocate_kv(kv_layout(*model_, cache_));
    // Scratch is reserved once, before the first step, for the larger of a decode step and a
    // full prefill batch (every step in between needs no more): planned, never grown, and the
    // figure the memory planner computes. Only all-logits steps may need more later.
    graph_for(1, false);
    graph_for(n_batch_, false);
    positions_.resize(static_cast<size_t>(n_batch_));
    tokens_.reserve(static_cast<size_t>(cache_.n_ctx));  // the cache's token list never reallocates
}

const Graph& Engine::graph_for(int64_t n_tokens, bool all_logits) {
    auto key = std::make_pair(n_tokens, all_logits);
    auto it = graphs_.find(key);
    if (it == graphs_.end()) {
        it = graphs_.emplace(key, build_step_graph(*model_, cache_, {n_tokens, all_logits})).first;
        scratch_peak_ = std::max(scratch_peak_, it->second.scratch_bytes());
        backend_->reserve_scratch(scratch_peak_);
    }
    return it->second;
}

void Engine::decode(std::span<const int32_t> ids, std::vector<float>& logits, bool all_logits) {
    if (ids.empty()) throw Error("engine: nothing to decode (no tokens)");
    const auto n = static_cast<int64_t>(ids.size());
    if (n_past() + n > cache_.n_ctx)
        throw Error("context full: " + std::to_string(n_past()) + " cached + " + std::to_string(n) +
                    " new tokens exceed the context of " + std::to_string(cache_.n_ctx) +
                    " tokens (raise --ctx or start a new conversation)");
    const int64_t n_vocab = model_->hp.n_vocab;
    for (int32_t id : ids)
        if (id < 0 || id >= n_vocab)
            throw Error("engine: token id " + std::to_string(id) + " outside the vocabulary of " +
                        std::to_string(n_vocab));
    if (listener_) listener_->on_decode(n_past(), ids, all_logits);
    const size_t need = static_cast<size_t>((all_logits ? n : 1) * n_vocab);
    if (logits.size() != need) logits.resize(need);
    StepIO& io = io_;
    io.inputs.resize(2);
    io.outputs.resize(1);
    for (int64_t b = 0; b < n; b += n_batch_) {
        const int64_t len = std::min(n_batch_, n - b);
        const Graph& g = graph_for(len, all_logits);
        for (int64_t t = 0; t < len; ++t) positions_[t] = static_cast<int32_t>(n_past() + t);
        io.n_past = static_cast<int32_t>(n_past());
        io.inputs[kInputIds] = ids.data() + b;
        io.inputs[kInputPositions] = positions_.data();
        // Only the last batch's logits matter unless every position was asked for.
        io.outputs[kOutputLogits] = logits.data() + (all_logits ? b * n_vocab : 0);
        backend_->compute(g, io);
        tokens_.insert(tokens_.end(), ids.begin() + b, ids.begin() + b + len);
    }
    if (n > 1) {
        const float* last = logits.data() + (all_logits ? (n - 1) * n_vocab : 0);
        batch_logits_.assign(last, last + n_vocab);
        batch_logits_at_ = tokens_.size();
    }
}

size_t Engine::prefill(std::span<const int32_t> prompt, std::vector<float>& logits) {
    if (prompt.empty()) throw Error("engine: nothing to decode (no tokens)");
    const size_t at = batch_logits_at_;
    if (at == prompt.size() && tokens_.size() >= at &&
        std::equal(prompt.begin(), prompt.end(), tokens_.begin())) {
        tokens_.resize(at);
        logits = batch_logits_;
        return at;
    }
    const size_t k = keep_prefix(prompt);
    decode(prompt.subspan(k), logits);
    return k;
}

size_t Engine::keep_prefix(std::span<const int32_t> tokens) {
    size_t k = 0;
    while (k < tokens_.size() && k < tokens.size() && tokens_[k] == tokens[k]) ++k;
    if (k == tokens.size() && k > 0) --k;  // the last token runs again for its logits
    tokens_.resize(k);
    if (batch_logits_at_ > k) batch_logits_at_ = 0;
    return k;
}

void Engine::truncate(int64_t n) {
    if (n < 0 || n > n_past())
        throw Error("engine: cannot keep " + std::to_string(n) + " of " + std::to_string(n_past()) +
                    " cached tokens");
    tokens_.resize(static_cast<size_t>(n));
    if (batch_logits_at_ > tokens_.size()) batch_logits_at_ = 0;
}

uint64_t Engine::decode_weight_bytes() const {
    uint64_t n = 0;
    for (const Weight* w : model_->weights())
        if (w->slot != model_->tok_embd.slot || model_->output.slot == w->slot) n += w->nbytes;
    n += row_bytes(model_->tok_embd.type, static_cast<uint64_t>(model_->hp.n_embd));
    // MoE: only the routed experts are read.
    if (model_->hp.n_expert > 0) {
        const double used = double(model_->hp.n_expert_used) / double(model_->hp.n_expert);
        for (const Layer& l : model_->layers)
            for (const Weight* w : {&l.gate_exps, &l.up_exps, &l.down_exps})
                n -= static_cast<uint64_t>(double(w->nbytes) * (1.0 - used));
    }
    return n;
}

}  // namespace tandem::engine
