#pragma once
// Runs a model on one backend: owns the KV cache state (which tokens are cached), batches
// prefill, reuses the cached prefix across chat turns, and keeps one step graph per token count
// so a decode step allocates nothing.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "tandem/backend/backend.h"
#include "tandem/engine/graph_builder.h"
#include "tandem/engine/model.h"

namespace tandem::engine {

struct EngineOptions {
    int64_t n_ctx = 4096;        // 0: the model's training context
    DType kv_type = DType::F16;  // F16 or F32
    int64_t n_batch = 512;       // most tokens per prefill step
};

// Told about every decode() before it runs (after its checks). A tensor-parallel coordinator
// forwards the call to its workers so every rank runs the same steps on the same tokens.
class StepListener {
  public:
    virtual ~StepListener() = default;
    // n_past: cached tokens the step starts from (the caller may have dropped some since).
    virtual void on_decode(int64_t n_past, std::span<const int32_t> ids, bool all_logits) = 0;
};

class Engine {
  public:
    Engine(std::shared_ptr<const Model> model, std::unique_ptr<Backend> backend,
           EngineOptions options = {});

    const Model& model() const { return *model_; }
    Backend& backend() { return *backend_; }
    int64_t n_ctx() const { return cache_.n_ctx; }
    int64_t n_vocab() const { return model_->hp.n_vocab; }
    // Tokens whose K/V are in the cache, in order (position = index).
    const std::vector<int32_t>& cached() const { return tokens_; }
    int64_t n_past() const { return static_cast<int64_t>(tokens_.size()); }

    // Appends `ids` to the context and runs them. logits: [n, n_vocab] for every new token when
    // all_logits, else [1, n_vocab] of the last one. Throws tandem::Error when the context would
    // overflow (nothing is changed then).
    void decode(std::span<const int32_t> ids, std::vector<float>& logits, bool all_logits = false);

    // Keeps the longest cached prefix shared with `tokens` (never all of it: the last token must
    // run again to give logits) and returns its length; the caller then decodes the rest.
    size_t keep_prefix(std::span<const int32_t> tokens);
    // A prompt's logits, running only what the cache lacks: keep_prefix + decode, except that a
    // prompt that is exactly the cache up to the end of the last multi-token step reuses that
    // step's logits instead of running its last token alone. Returns the tokens reused.
    // Why: a lone token takes the row kernels, a batch the GEMM, and their float sums round
    // differently; the same request twice must give the same greedy answer.
    size_t prefill(std::span<const int32_t> prompt, std::vector<float>& logits);
    void clear() {
        tokens_.clear();
        batch_logits_at_ = 0;
    }
    // Keeps the first n cached tokens (a tensor-parallel worker following its coordinator).
    void truncate(int64_t n);

    // Tensor-parallel group this engine's shard belongs to (nullptr: alone).
    void set_collective(Collective* c) { backend_->set_collective(c); }
    void set_step_listener(StepListener* l) { listener_ = l; }
    // Bytes of weights read by one decode step (all weights of this shard but the embedding
    // table, of which one row is read).
    uint64_t decode_weight_bytes() const;
    uint64_t scratch_peak() const { return scratch_peak_; }

  private:
    const Graph& graph_for(int64_t n_tokens, bool all_logits);

    std::shared_ptr<const Model> model_;
    std::unique_ptr<Backend> backend_;
    CacheConfig cache_;
    int64_t n_batch_;
    std::vector<int32_t> tokens_;
    std::vector<int32_t> positions_;
    StepIO io_;  // reused: a decode step allocates nothing
    std::map<std::pair<int64_t, bool>, Graph> graphs_;
    uint64_t scratch_peak_ = 0;
    StepListener* listener_ = nullptr;
    // [n_vocab] logits of the last token of the last multi-token decode, valid while the cache
    // still holds the batch_logits_at_ tokens they came after (0: none).
    std::vector<float> batch_logits_;
    size_t batch_logits_at_ = 0;
};

}  // namespace tandem::engine
