// Shard shapes and file ranges. The slicing rules mirror engine::load_model (see
// core/src/engine/model_loader.cpp): Q/K/V (and biases), FFN gate/up and the output head are cut
// by rows, attn_output and ffn_down by columns (whole quant blocks), expert tensors by expert;
// everything else is replicated.
#include "tandem/planner/shard_shape.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "tandem/common/error.h"

namespace tandem::planner {

namespace {

using engine::HParams;
using engine::Model;
using engine::ShardSpec;
using engine::Weight;

enum class CutKind { None, Rows, Cols };
struct Cut {
    CutKind kind = CutKind::None;
    int64_t b = 0, e = 0;
};

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Cut cut_of(const Weight& w, bool is_output, const HParams& hp, const ShardSpec& s) {
    if (is_output) return {CutKind::Rows, s.vocab_begin, s.vocab_end};
    const int64_t hd = hp.head_dim;
    const int64_t q_b = s.q_begin(hp) * hd, q_e = s.q_end(hp) * hd;
    const int64_t kv_b = s.kv_head_begin * hd, kv_e = s.kv_head_end * hd;
    const std::string_view n = w.name;
    if (ends_with(n, ".attn_q.weight") || ends_with(n, ".attn_q.bias"))
        return {CutKind::Rows, q_b, q_e};
    if (ends_with(n, ".attn_k.weight") || ends_with(n, ".attn_k.bias") ||
        ends_with(n, ".attn_v.weight") || ends_with(n, ".attn_v.bias"))
        return {CutKind::Rows, kv_b, kv_e};
    if (ends_with(n, ".attn_output.weight")) return {CutKind::Cols, q_b, q_e};
    if (ends_with(n, ".ffn_gate.weight") || ends_with(n, ".ffn_up.weight"))
        return {CutKind::Rows, s.ff_begin, s.ff_end};
    if (ends_with(n, ".ffn_down.weight")) return {CutKind::Cols, s.ff_begin, s.ff_end};
    if (ends_with(n, "_exps.weight")) return {CutKind::Rows, s.expert_begin, s.expert_end};
    return {};
}

int outer_dim(const Weight& w) {
    return w.ne[2] > 1 ? 2 : (w.ne[1] > 1 ? 1 : 0);
}

// The weight as the shard holds it (shape, size); data stays the whole tensor's start.
Weight cut_weight(Weight w, const Cut& c) {
    if (!w.present() || c.kind == CutKind::None) return w;
    const auto& tr = dtype_traits(w.type);
    if (c.kind == CutKind::Cols) {
        if (c.b == 0 && c.e == w.ne[0]) return w;
        if (c.b % tr.block_elems || c.e % tr.block_elems)
            throw Error("tensor '" + w.name + "': column slice [" + std::to_string(c.b) + ", " +
                        std::to_string(c.e) + ") not in whole " + std::string(tr.name) + " blocks");
        w.ne[0] = c.e - c.b;
        w.nbytes = row_bytes(w.type, uint64_t(w.ne[0])) * uint64_t(w.ne[1] * w.ne[2]);
        return w;
    }
    const int dim = outer_dim(w);
    if (dim == 0) {
        if (c.b % tr.block_elems || (c.e % tr.block_elems && c.e != w.ne[0]))
            throw Error("tensor '" + w.name + "': slice not in whole blocks");
        w.ne[0] = c.e - c.b;
        w.nbytes = row_bytes(w.type, uint64_t(w.ne[0]));
        return w;
    }
    const uint64_t unit = row_bytes(w.type, uint64_t(w.ne[0])) * (dim == 2 ? uint64_t(w.ne[1]) : 1);
    w.ne[dim] = c.e - c.b;
    w.nbytes = unit * uint64_t(c.e - c.b);
    return w;
}

// [b, e) boundaries of n parts of `units` proportional to shares, each part >= 1 unit.
std::vector<int64_t> boundaries(int64_t units, const std::vector<double>& shares) {
    const int n = static_cast<int>(shares.size());
    double total = 0;
    for (double s : shares) total += s;
    std::vector<int64_t> b(static_cast<size_t>(n) + 1, 0);
    double acc = 0;
    for (int k = 1; k < n; ++k) {
        acc += shares[static_cast<size_t>(k - 1)];
        auto v = static_cast<int64_t>(std::llround(double(units) * acc / total));
        b[static_cast<size_t>(k)] =
            std::clamp<int64_t>(v, b[static_cast<size_t>(k - 1)] + 1, units - (n - k));
    }
    b[static_cast<size_t>(n)] = units;
    return b;
}

// More ranks than KV heads: Q-head boundaries proportional to shares such that every rank's
// heads lie in one GQA group (so it holds exactly one KV head, replicated on the other ranks
// of that group, and its local heads map onto it as in an unsplit model). Each rank gets at
// least one head and every group at least one rank.
std::vector<int64_t> replicated_kv_boundaries(const HParams& hp,
                                              const std::vector<double>& shares) {
    const int n = static_cast<int>(shares.size());
    const int64_t H = hp.n_head, KV = hp.n_kv_head, group = H / KV;
    double total = 0;
    for (double s : shares) total += s;
    std::vector<int64_t> b(static_cast<size_t>(n) + 1, 0);
    double acc = 0;
    for (int k = 0; k < n - 1; ++k) {
        acc += shares[static_cast<size_t>(k)];
        const int64_t pos = b[static_cast<size_t>(k)];
        const int64_t left = n - 1 - k;  // ranks after this one
        const int64_t group_end = (pos / group + 1) * group;
        // The ranks after this one cover whole groups from our end on, one group at most each.
        const int64_t lo = std::max(pos + 1, (KV - left) * group);
        const int64_t hi = std::min(group_end, H - left);
        const auto want = static_cast<int64_t>(std::llround(double(H) * acc / total));
        b[static_cast<size_t>(k) + 1] = std::clamp(want, lo, std::max(lo, hi));
    }
    b[static_cast<size_t>(n)] = H;
    return b;
}

}  // namespace

std::shared_ptr<Model> shape_shard(const Model& whole, const ShardSpec& shard) {
    if (whole.shard.n_ranks != 1)
        throw Error("planner: shape_shard needs the whole model, got shard " +
                    std::to_string(whole.shard.rank) + " of " +
                    std::to_string(whole.shard.n_ranks));
    const HParams& hp = whole.hp;
    if (shard.kv_head_end <= shard.kv_head_begin || shard.kv_head_end > hp.n_kv_head ||
        shard.vocab_end <= shard.vocab_begin || shard.vocab_end > hp.n_vocab)
        throw Error("planner: shard ranges outside the model");
    auto m = std::make_shared<Model>();
    m->hp = hp;
    m->shard = shard;
    m->file = whole.file;
    m->tok_embd = whole.tok_embd;
    m->rope_freqs = whole.rope_freqs;
    m->output_norm = whole.output_norm;
    m->layers = whole.layers;
    for (engine::Layer& l : m->layers)
        l.for_each_weight([&](Weight& w) { w = cut_weight(w, cut_of(w, false, hp, shard)); });
    const bool tied = whole.output.slot == whole.tok_embd.slot;
    m->output = cut_weight(whole.output, cut_of(whole.output, true, hp, shard));
    // A tied head that keeps the whole vocabulary stays the embedding's slot; a slice of it is
    // a weight of its own (as in the loader).
    if (tied && m->output.ne != m->tok_embd.ne) {
        int last = m->output_norm.slot;
        for (const Weight* w : whole.weights()) last = std::max(last, w->slot);
        m->output.slot = last + 1;
    }
    return m;
}

std::vector<WeightSource> weight_sources(const Model& shaped) {
    const gguf::File& f = *shaped.file;
    const HParams& hp = shaped.hp;
    std::vector<WeightSource> out;
    for (const Weight* w : shaped.weights()) {
        const gguf::TensorInfo* t = f.tensor(w->name);
        if (!t) throw Error(f.path().string() + ": tensor '" + w->name + "' missing");
        const uint64_t base = f.data_offset() + t->offset;
        WeightSource src{w, {}};
        const Cut c = cut_of(*w, w == &shaped.output, hp, shaped.shard);
        const std::array<int64_t, 3> whole_ne{int64_t(t->shape.size() > 0 ? t->shape[0] : 1),
                                              int64_t(t->shape.size() > 1 ? t->shape[1] : 1),
                                              int64_t(t->shape.size() > 2 ? t->shape[2] : 1)};
        if (c.kind == CutKind::Cols && !(c.b == 0 && c.e == whole_ne[0])) {
            const uint64_t src_row = row_bytes(w->type, uint64_t(whole_ne[0]));
            const uint64_t off = row_bytes(w->type, uint64_t(c.b));
            const uint64_t len = row_bytes(w->type, uint64_t(c.e - c.b));
            const int64_t rows = whole_ne[1] * whole_ne[2];
            src.ranges.reserve(static_cast<size_t>(rows));
            for (int64_t r = 0; r < rows; ++r)
                src.ranges.push_back({base + src_row * uint64_t(r) + off, len});
        } else if (c.kind == CutKind::Rows) {
            Weight probe = *w;
            probe.ne = whole_ne;
            const int dim = outer_dim(probe);
            const uint64_t unit = dim == 0 ? 0
                                           : row_bytes(w->type, uint64_t(whole_ne[0])) *
                                                 (dim == 2 ? uint64_t(whole_ne[1]) : 1);
            const uint64_t start =
                dim == 0 ? row_bytes(w->type, uint64_t(c.b)) : unit * uint64_t(c.b);
            src.ranges.push_back({base + start, w->nbytes});
        } else {
            src.ranges.push_back({base, w->nbytes});
        }
        out.push_back(std::move(src));
    }
    return out;
}

std::vector<ByteRange> merge_ranges(std::vector<ByteRange> ranges) {
    std::sort(ranges.begin(), ranges.end(),
              [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
    std::vector<ByteRange> out;
    for (const ByteRange& r : ranges) {
        if (r.size == 0) continue;
        if (!out.empty() && r.offset <= out.back().end())
            out.back().size = std::max(out.back().end(), r.end()) - out.back().offset;
        else
            out.push_back(r);
    }
    return out;
}

ShardSpec shard_by_shares(const HParams& hp, int rank, const std::vector<double>& shares,
                          int64_t ff_align) {
    const int n = static_cast<int>(shares.size());
    if (n < 1 || rank < 0 || rank >= n)
        throw Error("shard: rank " + std::to_string(rank) + " of " + std::to_string(n) +
                    " invalid");
    for (double s : shares)
        if (!(s > 0)) throw Error("shard: every share must be positive");
    if (hp.n_head < n)
        throw Error("shard: " + std::to_string(hp.n_head) + " attention heads cannot be split " +
                    std::to_string(n) + " ways");
    if (n > 1 && hp.n_ff > 0 && hp.n_ff / ff_align < n)
        throw Error("shard: FFN width " + std::to_string(hp.n_ff) + " has fewer than " +
                    std::to_string(n) + " blocks of " + std::to_string(ff_align));
    if (hp.n_expert > 0 && hp.n_expert < n)
        throw Error("shard: " + std::to_string(hp.n_expert) + " experts cannot be split " +
                    std::to_string(n) + " ways");
    const auto r = static_cast<size_t>(rank);
    ShardSpec s;
    s.rank = rank;
    s.n_ranks = n;
    if (n <= hp.n_kv_head) {
        auto kv = boundaries(hp.n_kv_head, shares);
        s.kv_head_begin = kv[r];
        s.kv_head_end = kv[r + 1];
    } else {
        auto q = replicated_kv_boundaries(hp, shares);
        const int64_t group = hp.n_head / hp.n_kv_head;
        s.q_head_begin = q[r];
        s.q_head_end = q[r + 1];
        s.kv_head_begin = q[r] / group;
        s.kv_head_end = s.kv_head_begin + 1;
    }
    if (hp.n_ff > 0) {
        const int64_t align = n > 1 ? ff_align : 1;
        auto ff = boundaries(hp.n_ff / align, shares);
        s.ff_begin = ff[r] * align;
        s.ff_end = rank == n - 1 ? hp.n_ff : ff[r + 1] * align;
    }
    if (hp.n_expert > 0) {
        auto ex = boundaries(hp.n_expert, shares);
        s.expert_begin = ex[r];
        s.expert_end = ex[r + 1];
    }
    auto voc = boundaries(hp.n_vocab, shares);
    s.vocab_begin = voc[r];
    s.vocab_end = voc[r + 1];
    return s;
}

}  // namespace tandem::planner
