#include "tandem/backend/fusion.h"

#include <algorithm>

namespace tandem {

namespace {

// Whether both ropes rotate whole heads of head_dim alike (positions, frequencies, parameters).
bool same_whole_head_ropes(const Node& rq, const Node& rk) {
    const int32_t hd = rq.i[0];
    return rk.i == rq.i && rk.f == rq.f && rk.src[1] == rq.src[1] && rk.src[2] == rq.src[2] &&
           hd > 0 && hd % 2 == 0 && rq.i[1] == hd &&
           (rq.i[2] == int(RopeMode::Normal) || rq.i[2] == int(RopeMode::Neox));
}

// Whether the activations ts are read by no node outside nodes[first..last].
bool read_only_inside(const Graph& g, std::initializer_list<TensorId> ts, size_t first,
                      size_t last) {
    const std::vector<Node>& nodes = g.nodes();
    for (TensorId t : ts) {
        if (g.tensor(t).role != TensorRole::Activation) return false;
        for (size_t i = 0; i < nodes.size(); ++i)
            if ((i < first || i > last) &&
                std::find(nodes[i].src.begin(), nodes[i].src.end(), t) != nodes[i].src.end())
                return false;
    }
    return true;
}

// The ropes and stores rq, rk, sk, sv when they qualify (RopeStores).
std::optional<RopeStores> rope_stores(const Graph& g, const Node& rq, const Node& rk,
                                      const Node& sk, const Node& sv) {
    if (rq.op != Op::Rope || rk.op != Op::Rope || sk.op != Op::KvStore || sv.op != Op::KvStore ||
        sk.src[0] != rk.out || !same_whole_head_ropes(rq, rk))
        return std::nullopt;
    const int32_t hd = rq.i[0];
    const GraphTensor &kc = g.tensor(sk.src[1]), &vc = g.tensor(sv.src[1]);
    if (kc.type != vc.type || (kc.type != DType::F16 && kc.type != DType::F32) ||
        kc.cols() != g.tensor(rk.src[0]).cols() || vc.cols() != g.tensor(sv.src[0]).cols() ||
        g.tensor(rq.src[0]).cols() % hd != 0 || g.tensor(rk.src[0]).cols() % hd != 0)
        return std::nullopt;
    return RopeStores{
        &rq, &rk, &sk, &sv, hd, rq.i[2] == int(RopeMode::Neox), kc.type == DType::F16};
}

}  // namespace

std::optional<QkNormRopeMatch> match_qk_norm_rope(const Graph& g, size_t at) {
    const std::vector<Node>& nodes = g.nodes();
    if (at + 5 >= nodes.size()) return std::nullopt;
    const Node &nq = nodes[at], &nk = nodes[at + 1];
    const auto rs = rope_stores(g, nodes[at + 2], nodes[at + 3], nodes[at + 4], nodes[at + 5]);
    if (!rs || nq.op != Op::RmsNorm || nk.op != Op::RmsNorm || rs->rope_q->src[0] != nq.out ||
        rs->rope_k->src[0] != nk.out)
        return std::nullopt;
    const int32_t hd = rs->head_dim;
    const GraphTensor &q = g.tensor(nq.src[0]), &k = g.tensor(nk.src[0]);
    const GraphTensor& v = g.tensor(rs->store_v->src[0]);
    if (nq.i[0] != hd || nk.i[0] != hd || nq.f[0] != nk.f[0] || v.cols() != k.cols() ||
        q.rows() != k.rows() || v.rows() != k.rows() ||
        !read_only_inside(g, {nq.out, nk.out, rs->rope_k->out}, at, at + 5))
        return std::nullopt;
    return QkNormRopeMatch{*rs, &nq, &nk};
}

std::optional<QkvRopeMatch> match_qkv_rope(const Graph& g, size_t at) {
    const std::vector<Node>& nodes = g.nodes();
    if (at + 6 >= nodes.size()) return std::nullopt;
    const Node &mq = nodes[at], &mk = nodes[at + 1], &mv = nodes[at + 2];
    const auto rs = rope_stores(g, nodes[at + 3], nodes[at + 4], nodes[at + 5], nodes[at + 6]);
    if (!rs || mq.op != Op::MatMul || mk.op != Op::MatMul || mv.op != Op::MatMul ||
        mk.src[1] != mq.src[1] || mv.src[1] != mq.src[1] || rs->rope_q->src[0] != mq.out ||
        rs->rope_k->src[0] != mk.out || rs->store_v->src[0] != mv.out ||
        !read_only_inside(g, {mq.out, mk.out, mv.out, rs->rope_k->out}, at + 3, at + 6))
        return std::nullopt;
    return QkvRopeMatch{*rs, &mq, &mk, &mv};
}

TensorUses tensor_uses(const Graph& g) {
    TensorUses u;
    u.last_read.assign(g.tensors().size(), 0);
    u.last_write.assign(g.tensors().size(), 0);
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        const Node& n = g.nodes()[i];
        for (TensorId t : n.src)
            if (t != kNoTensor) u.last_read[static_cast<size_t>(t)] = static_cast<int32_t>(i);
        u.last_write[static_cast<size_t>(n.out)] = static_cast<int32_t>(i);
    }
    return u;
}

std::optional<MatvecResidNormMatch> match_matvec_resid_norm(const Graph& g, size_t at,
                                                            const TensorUses& uses, bool one_rank) {
    const std::vector<Node>& nodes = g.nodes();
    if (at >= nodes.size() || uses.last_read.size() != g.tensors().size()) return std::nullopt;
    const Node& mm = nodes[at];
    if (mm.op != Op::MatMul) return std::nullopt;
    size_t j = at + 1;  // the Add
    if (j < nodes.size() && nodes[j].op == Op::AllReduce && nodes[j].src[0] == mm.out &&
        nodes[j].out == mm.out && one_rank)
        ++j;
    if (j + 1 >= nodes.size()) return std::nullopt;
    const Node &add = nodes[j], &norm = nodes[j + 1];
    if (add.op != Op::Add || norm.op != Op::RmsNorm || norm.src[0] != add.out ||
        (add.src[0] != mm.out && add.src[1] != mm.out))
        return std::nullopt;
    const TensorId resid = add.src[0] == mm.out ? add.src[1] : add.src[0];
    const GraphTensor &o = g.tensor(mm.out), &s = g.tensor(add.out);
    if (resid == mm.out || s.ne != o.ne || (norm.i[0] > 0 && norm.i[0] != s.cols()) ||
        o.role != TensorRole::Activation || g.tensor(norm.out).role != TensorRole::Activation)
        return std::nullopt;
    const auto at_of = [](const std::vector<int32_t>& v, TensorId id) {
        return static_cast<size_t>(v[static_cast<size_t>(id)]);
    };
    const size_t last = at_of(uses.last_read, norm.out);
    if (at_of(uses.last_read, mm.out) > j || at_of(uses.last_write, add.out) != j ||
        at_of(uses.last_write, norm.out) != j + 1 || last <= j + 1)
        return std::nullopt;
    return MatvecResidNormMatch{&mm, &add, &norm, resid, j + 2 - at, last};
}

}  // namespace tandem
