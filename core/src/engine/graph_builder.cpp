// One decoder step for llama, qwen2, qwen3, qwen3moe and gemma3, as graph nodes. Architecture
// differences are switches on the hyper-parameters and on which weights are present (biases,
// QK-norm, post-norms, experts), so a new architecture of the same family is a few lines here.
#include "tandem/engine/graph_builder.h"

#include "tandem/common/error.h"

namespace tandem::engine {

std::vector<KvDesc> kv_layout(const Model& m, const CacheConfig& cache) {
    if (cache.kv_type != DType::F16 && cache.kv_type != DType::F32)
        throw Error("KV cache type must be f16 or f32, not " +
                    std::string(dtype_name(cache.kv_type)));
    const int64_t width = m.n_kv_head_local() * m.hp.head_dim;
    return std::vector<KvDesc>(static_cast<size_t>(2 * m.hp.n_layer),
                               KvDesc{cache.kv_type, width, cache.n_ctx});
}

namespace {

class Builder {
  public:
    Builder(const Model& m, const CacheConfig& c, int64_t n_tokens)
        : m_(m), hp_(m.hp), c_(c), T_(n_tokens) {}

    Graph& graph() { return g_; }

    TensorId w(const Weight& wt) {
        if (!wt.present()) return kNoTensor;
        return g_.weight(wt.slot, wt.name, wt.type, wt.ne);
    }
    TensorId node(Op op, TensorId out, std::initializer_list<TensorId> src,
                  std::array<int32_t, 4> i = {0, 0, 0, 0}, std::array<float, 2> f = {0, 0}) {
        g_.add_node(make_node(op, out, src, i, f));
        return out;
    }
    TensorId act(const std::string& name, int64_t cols, int64_t rows = -1) {
        return g_.activation(name, cols, rows < 0 ? T_ : rows);
    }
    // Shapes are read into locals first: creating a tensor may reallocate the tensor list, and
    // argument evaluation order would otherwise decide whether a reference dangles.
    TensorId norm(const std::string& name, TensorId x, const Weight& weight, int64_t group = 0) {
        const int64_t cols = g_.tensor(x).cols(), rows = g_.tensor(x).rows();
        const TensorId wt = w(weight);
        const TensorId out = act(name, cols, rows);
        return node(Op::RmsNorm, out, {x, wt}, {static_cast<int32_t>(group), 0, 0, 0},
                    {hp_.rms_eps, 0});
    }
    TensorId matmul(const std::string& name, const Weight& wt, TensorId x,
                    const Weight* bias = nullptr) {
        const int64_t rows = g_.tensor(x).rows();
        const TensorId w_id = w(wt);
        const TensorId b_id = bias ? w(*bias) : kNoTensor;
        const TensorId out = act(name, wt.ne[1], rows);
        return node(Op::MatMul, out, {w_id, x, b_id});
    }
    TensorId binary(Op op, const std::string& name, TensorId a, TensorId b) {
        const int64_t cols = g_.tensor(a).cols(), rows = g_.tensor(a).rows();
        const TensorId out = act(name, cols, rows);
        return node(op, out, {a, b});
    }
    TensorId all_reduce(TensorId x) { return node(Op::AllReduce, x, {x}); }

    void attention_block(int64_t il, TensorId& x, TensorId ids_pos) {
        const Layer& l = m_.layers[static_cast<size_t>(il)];
        const std::string p = "l" + std::to_string(il) + ".";
        const int64_t hd = hp_.head_dim, H = m_.n_head_local(), KV = m_.n_kv_head_local();
        TensorId cur = norm(p + "attn_in", x, l.attn_norm);
        TensorId q = matmul(p + "q", l.wq, cur, l.bq.present() ? &l.bq : nullptr);
        TensorId k = matmul(p + "k", l.wk, cur, l.bk.present() ? &l.bk : nullptr);
        TensorId v = matmul(p + "v", l.wv, cur, l.bv.present() ? &l.bv : nullptr);
        if (l.q_norm.present()) q = norm(p + "q_normed", q, l.q_norm, hd);
        if (l.k_norm.present()) k = norm(p + "k_normed", k, l.k_norm, hd);
        const bool swa = hp_.is_swa_layer(il);
        const float base = swa ? hp_.rope_base_swa : hp_.rope_base;
        const std::array<int32_t, 4> rope_i{static_cast<int32_t>(hd),
                                            static_cast<int32_t>(hp_.n_rot),
                                            static_cast<int32_t>(hp_.rope_mode), 0};
        const TensorId freqs = w(m_.rope_freqs);
        q = node(Op::Rope, act(p + "q_rope", H * hd), {q, ids_pos, freqs}, rope_i,
                 {base, hp_.rope_scale});
        k = node(Op::Rope, act(p + "k_rope", KV * hd), {k, ids_pos, freqs}, rope_i,
                 {base, hp_.rope_scale});
        const TensorId kc =
            g_.kv(static_cast<int>(2 * il), p + "k_cache", c_.kv_type, KV * hd, c_.n_ctx);
        const TensorId vc =
            g_.kv(static_cast<int>(2 * il + 1), p + "v_cache", c_.kv_type, KV * hd, c_.n_ctx);
        node(Op::KvStore, kc, {k, kc});
        node(Op::KvStore, vc, {v, vc});
        const int32_t window = swa ? static_cast<int32_t>(hp_.sliding_window) : 0;
        TensorId a = node(
            Op::Attention, act(p + "attn", H * hd), {q, kc, vc},
            {static_cast<int32_t>(H), static_cast<int32_t>(KV), static_cast<int32_t>(hd), window},
            {hp_.attn_scale, hp_.attn_softcap});
        TensorId o = all_reduce(matmul(p + "attn_out", l.wo, a));
        if (l.post_attn_norm.present()) o = norm(p + "attn_post", o, l.post_attn_norm);
        x = binary(Op::Add, p + "resid_attn", x, o);
    }

    void ffn_block(int64_t il, TensorId& x) {
        const Layer& l = m_.layers[static_cast<size_t>(il)];
        const std::string p = "l" + std::to_string(il) + ".";
        const auto activation = static_cast<int32_t>(hp_.arch == Arch::Gemma3 ? Activation::GeluTanh
                                                                              : Activation::Silu);
        TensorId cur = norm(p + "ffn_in", x, l.ffn_norm);
        TensorId f;
        if (l.ffn_router.present()) {
            TensorId logits = matmul(p + "router", l.ffn_router, cur);
            const auto k = static_cast<int32_t>(hp_.n_expert_used);
            TensorId route = node(Op::MoeRoute, act(p + "route", 2 * k), {logits},
                                  {k, hp_.expert_norm ? 1 : 0, 0, 0});
            f = node(Op::MoeFfn, act(p + "moe", hp_.n_embd),
                     {cur, route, w(l.gate_exps), w(l.up_exps), w(l.down_exps)},
                     {static_cast<int32_t>(m_.shard.expert_begin), activation, 0, 0});
        } else {
            TensorId gate = matmul(p + "gate", l.ffn_gate, cur);
            TensorId up = matmul(p + "up", l.ffn_up, cur);
            TensorId h = node(Op::GatedAct, act(p + "gated", l.ffn_gate.ne[1]), {gate, up},
                              {activation, 0, 0, 0});
            f = matmul(p + "down", l.ffn_down, h);
        }
        f = all_reduce(f);
        if (l.post_ffn_norm.present()) f = norm(p + "ffn_post", f, l.post_ffn_norm);
        x = binary(Op::Add, p + "resid_ffn", x, f);
    }

    Graph build(bool all_logits) {
        const TensorId ids = g_.input(kInputIds, "ids", DType::I32, T_);
        const TensorId pos = g_.input(kInputPositions, "positions", DType::I32, T_);
        TensorId x = node(Op::GetRows, act("embd", hp_.n_embd), {w(m_.tok_embd), ids});
        if (hp_.embd_scale != 1.0f)
            x = node(Op::Scale, act("embd_scaled", hp_.n_embd), {x}, {0, 0, 0, 0},
                     {hp_.embd_scale, 0});
        for (int64_t il = 0; il < hp_.n_layer; ++il) {
            attention_block(il, x, pos);
            ffn_block(il, x);
        }
        const int64_t n_out = all_logits ? T_ : 1;
        if (!all_logits && T_ > 1)
            x = node(Op::TakeRows, act("last", hp_.n_embd, 1), {x},
                     {static_cast<int32_t>(T_ - 1), 0, 0, 0});
        x = norm("out_norm", x, m_.output_norm);
        const TensorId logits_out = g_.output(kOutputLogits, "logits", hp_.n_vocab, n_out);
        const bool single = m_.shard.n_ranks == 1 && hp_.final_softcap == 0.0f;
        TensorId logits = single ? logits_out : act("logits_local", m_.output.ne[1], n_out);
        node(Op::MatMul, logits, {w(m_.output), x});
        if (hp_.final_softcap != 0.0f)
            logits = node(Op::Softcap, act("logits_capped", m_.output.ne[1], n_out), {logits},
                          {0, 0, 0, 0}, {hp_.final_softcap, 0});
        if (!single) node(Op::AllGather, logits_out, {logits});
        g_.validate();
        g_.plan_scratch();
        return std::move(g_);
    }

  private:
    const Model& m_;
    const HParams& hp_;
    const CacheConfig& c_;
    int64_t T_;
    Graph g_;
};

}  // namespace

Graph build_step_graph(const Model& m, const CacheConfig& cache, const StepShape& shape) {
    if (shape.n_tokens <= 0) throw Error("step graph: n_tokens must be positive");
    Builder b(m, cache, shape.n_tokens);
    return b.build(shape.all_logits);
}

}  // namespace tandem::engine
