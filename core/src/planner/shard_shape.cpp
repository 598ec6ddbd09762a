// Shard shapes and file ranges, from the engine's own slicing rule (engine/weight_cut.h) and its
// layout-only load: the planner and the loader cannot disagree on what a shard holds.
#include "tandem/planner/shard_shape.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "tandem/common/error.h"
#include "tandem/engine/shard_split.h"
#include "tandem/engine/weight_cut.h"

namespace tandem::planner {

namespace {

using engine::HParams;
using engine::Model;
using engine::ShardSpec;
using engine::Weight;

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
    if (!whole.file) throw Error("planner: shape_shard needs a model loaded from a file");
    return engine::load_layout(whole.file, shard);
}

std::vector<WeightSource> weight_sources(const Model& shaped) {
    const gguf::File& f = *shaped.file;
    std::vector<WeightSource> out;
    for (const Weight* w : shaped.weights()) {
        const gguf::TensorInfo* t = f.tensor(w->name);
        if (!t) throw Error(f.path().string() + ": tensor '" + w->name + "' missing");
        std::array<int64_t, 3> ne{1, 1, 1};
        for (size_t i = 0; i < 3 && i < t->shape.size(); ++i) ne[i] = int64_t(t->shape[i]);
        const engine::CutLayout c = engine::cut_layout(
            w->name, w->type, ne,
            engine::weight_cut(w->name, w == &shaped.output, shaped.hp, shaped.shard));
        const uint64_t base = f.data_offset() + t->offset;
        WeightSource src{w, {}};
        src.ranges.reserve(c.spans.size());
        for (const engine::ByteSpan& sp : c.spans)
            src.ranges.push_back({base + sp.offset, sp.size});
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
    for (double s : shares)
        if (!(s > 0)) throw Error("shard: every share must be positive");
    engine::check_split(hp, rank, n, hp.n_head, "attention heads", ff_align);
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
