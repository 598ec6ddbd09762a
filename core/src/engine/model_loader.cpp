// Builds a Model from a GGUF file: finds every tensor an architecture needs, checks its shape
// against the hyper-parameters, and takes this shard's slice of it (weight_cut.h, the rule the
// planner uses too): row slices are views into the mapping, column slices are copied row by row
// (whole quant blocks) into buffers the model owns. A layout-only load takes no data at all.
#include <cstring>

#include "tandem/common/error.h"
#include "tandem/engine/model.h"
#include "tandem/engine/weight_cut.h"

namespace tandem::engine {

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
    std::string r = "{";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "}";
}

class Loader {
  public:
    Loader(Model& m, const gguf::File& f, bool layout_only)
        : m_(m), f_(f), layout_only_(layout_only) {}

    // The whole tensor, checked against `shape` (ggml order). Absent: error, or an empty Weight
    // when optional.
    Weight get(const std::string& name, std::vector<int64_t> shape, bool required = true) {
        const gguf::TensorInfo* t = f_.tensor(name);
        if (!t) {
            if (required) throw Error(f_.path().string() + ": tensor '" + name + "' missing");
            return {};
        }
        std::vector<int64_t> have(t->shape.begin(), t->shape.end());
        while (have.size() < shape.size()) have.push_back(1);
        if (have != shape)
            throw Error(f_.path().string() + ": tensor '" + name + "' has shape " +
                        shape_str(have) + ", expected " + shape_str(shape));
        Weight w;
        w.name = name;
        w.type = t->type;
        for (size_t i = 0; i < 3; ++i) w.ne[i] = i < shape.size() ? shape[i] : 1;
        w.data = layout_only_ ? nullptr : f_.tensor_data(*t);
        w.nbytes = t->nbytes;
        return w;
    }

    // This shard's part of a whole weight: a view for a row slice, a copy assembled row by row
    // for a column slice, only the shape and size when loading the layout.
    Weight slice(Weight w, const WeightCut& cut) {
        if (!w.present() || cut.kind == CutKind::None) return w;
        const CutLayout c = cut_layout(w.name, w.type, w.ne, cut);
        w.ne = c.ne;
        w.nbytes = c.nbytes;
        if (!w.data) return w;
        if (c.spans.size() == 1) {
            w.data += c.spans[0].offset;
            return w;
        }
        auto buf = std::make_unique<uint8_t[]>(c.nbytes);
        uint64_t at = 0;
        for (const ByteSpan& sp : c.spans) {
            std::memcpy(buf.get() + at, w.data + sp.offset, sp.size);
            at += sp.size;
        }
        w.data = buf.get();
        m_.owned.push_back(std::move(buf));
        return w;
    }

  private:
    Model& m_;
    const gguf::File& f_;
    bool layout_only_;
};

// Every layer weight whole (shape-checked views); cut_weights() takes the shard's part.
void load_layers(Model& m, Loader& L) {
    const HParams& hp = m.hp;
    const int64_t E = hp.n_embd, hd = hp.head_dim;
    const bool gemma = hp.arch == Arch::Gemma3;
    const bool qk_norm = hp.arch == Arch::Qwen3 || hp.arch == Arch::Qwen3Moe || gemma;
    m.layers.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        Layer& l = m.layers[static_cast<size_t>(il)];
        const std::string p = "blk." + std::to_string(il) + ".";
        l.attn_norm = L.get(p + "attn_norm.weight", {E});
        l.wq = L.get(p + "attn_q.weight", {E, hp.n_head * hd});
        l.wk = L.get(p + "attn_k.weight", {E, hp.n_kv_head * hd});
        l.wv = L.get(p + "attn_v.weight", {E, hp.n_kv_head * hd});
        if (hp.arch == Arch::Qwen2) {
            l.bq = L.get(p + "attn_q.bias", {hp.n_head * hd});
            l.bk = L.get(p + "attn_k.bias", {hp.n_kv_head * hd});
            l.bv = L.get(p + "attn_v.bias", {hp.n_kv_head * hd});
        }
        if (qk_norm) {
            l.q_norm = L.get(p + "attn_q_norm.weight", {hd});
            l.k_norm = L.get(p + "attn_k_norm.weight", {hd});
        }
        l.wo = L.get(p + "attn_output.weight", {hp.n_head * hd, E});
        if (gemma) {
            l.post_attn_norm = L.get(p + "post_attention_norm.weight", {E});
            l.post_ffn_norm = L.get(p + "post_ffw_norm.weight", {E});
        }
        l.ffn_norm = L.get(p + "ffn_norm.weight", {E});
        if (hp.arch == Arch::Qwen3Moe) {
            const int64_t X = hp.n_expert, F = hp.n_ff_exp;
            l.ffn_router = L.get(p + "ffn_gate_inp.weight", {E, X});
            l.gate_exps = L.get(p + "ffn_gate_exps.weight", {E, F, X});
            l.up_exps = L.get(p + "ffn_up_exps.weight", {E, F, X});
            l.down_exps = L.get(p + "ffn_down_exps.weight", {F, E, X});
        } else {
            const int64_t F = hp.n_ff;
            l.ffn_gate = L.get(p + "ffn_gate.weight", {E, F});
            l.ffn_up = L.get(p + "ffn_up.weight", {E, F});
            l.ffn_down = L.get(p + "ffn_down.weight", {F, E});
        }
    }
    for (Layer& l : m.layers)
        l.for_each_weight(
            [&](Weight& w) { w = L.slice(w, weight_cut(w.name, false, hp, m.shard)); });
}

void assign_slots(Model& m) {
    int slot = 0;
    auto take = [&](Weight& w) {
        if (w.present()) w.slot = slot++;
    };
    take(m.tok_embd);
    take(m.rope_freqs);
    for (Layer& l : m.layers) l.for_each_weight(take);
    take(m.output_norm);
    // A tied head covering the whole vocabulary is the embedding itself: one upload.
    if (m.output.name == m.tok_embd.name && m.output.ne == m.tok_embd.ne)
        m.output.slot = m.tok_embd.slot;
    else
        take(m.output);
}

}  // namespace

std::vector<const Weight*> Model::weights() const {
    std::vector<const Weight*> all;
    auto add = [&](const Weight& w) {
        if (w.present() && (all.empty() || w.slot > all.back()->slot)) all.push_back(&w);
    };
    add(tok_embd);
    add(rope_freqs);
    for (const Layer& l : layers) l.for_each_weight(add);
    add(output_norm);
    add(output);
    return all;
}

uint64_t Model::weight_bytes() const {
    uint64_t n = 0;
    for (const Weight* w : weights()) n += w->nbytes;
    return n;
}

namespace {

std::shared_ptr<Model> load(std::shared_ptr<const gguf::File> file, const ShardSpec& shard,
                            bool layout_only) {
    auto m = std::make_shared<Model>();
    m->file = file;
    m->hp = read_hparams(*file);
    m->shard = shard;
    const HParams& hp = m->hp;
    if (shard.kv_head_end <= shard.kv_head_begin || shard.kv_head_end > hp.n_kv_head ||
        shard.vocab_end <= shard.vocab_begin || shard.vocab_end > hp.n_vocab)
        throw Error(file->path().string() + ": shard ranges outside the model");
    {
        // Local Q heads must map onto local KV heads as in an unsplit model: whole groups, or
        // part of one group (its KV head replicated on several ranks).
        const int64_t group = hp.n_head / hp.n_kv_head, qb = shard.q_begin(hp),
                      qe = shard.q_end(hp);
        const bool whole_groups =
            qb == shard.kv_head_begin * group && qe == shard.kv_head_end * group;
        const bool in_one_group = shard.kv_head_end - shard.kv_head_begin == 1 &&
                                  qb >= shard.kv_head_begin * group && qe <= shard.kv_head_end * group;
        if (qe <= qb || !(whole_groups || in_one_group))
            throw Error(file->path().string() + ": shard Q heads [" + std::to_string(qb) + ", " +
                        std::to_string(qe) + ") do not fit KV heads [" +
                        std::to_string(shard.kv_head_begin) + ", " +
                        std::to_string(shard.kv_head_end) + ")");
    }
    Loader L(*m, *file, layout_only);
    m->tok_embd = L.get("token_embd.weight", {hp.n_embd, hp.n_vocab});
    m->rope_freqs = L.get("rope_freqs.weight", {hp.n_rot / 2}, false);
    load_layers(*m, L);
    m->output_norm = L.get("output_norm.weight", {hp.n_embd});
    Weight out = L.get("output.weight", {hp.n_embd, hp.n_vocab}, false);
    if (!out.present()) out = m->tok_embd;  // tied embeddings
    m->output = L.slice(out, weight_cut(out.name, true, hp, shard));
    assign_slots(*m);
    return m;
}

}  // namespace

std::shared_ptr<Model> load_model(std::shared_ptr<const gguf::File> file, const ShardSpec& shard) {
    return load(std::move(file), shard, false);
}

std::shared_ptr<Model> load_layout(std::shared_ptr<const gguf::File> file,
                                   const ShardSpec& shard) {
    return load(std::move(file), shard, true);
}

std::shared_ptr<Model> load_model(const std::filesystem::path& path) {
    auto file = std::make_shared<gguf::File>(gguf::File::open(path));
    auto hp = read_hparams(*file);
    return load_model(file, ShardSpec::whole(hp));
}

}  // namespace tandem::engine
