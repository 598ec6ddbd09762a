// The int8-dot decode matvec (matvec_q8.comp): which matmuls take it, the activation buffer
// it reads (quantised by quantize_q8.comp, or left by the RMSNorm / gated activation before
// the matmul), and its dispatch.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "tandem/backend/collective.h"
#include "vk_backend.h"
#include "vk_grid.h"
#include "vk_repack.h"

namespace tandem::vk {
namespace {

struct Q8MatPush {
    uint64_t w, xq, xd, y, bias;
    uint32_t n_in, n_out, n_tok, row_bytes, has_bias;
    // PARTS > 1: w1, w2, y1, y2, n_out1, n_out2; EPI > 0: see NormEpilogue's use below.
    uint64_t e[6];
    uint32_t u[2];
};
static_assert(offsetof(Q8MatPush, e) == 64 && sizeof(Q8MatPush) == 120);
static_assert(sizeof(Q8MatPush) <= kPushConstantBytes);

struct QuantPush {
    uint64_t a, b, y, qs, ds;
    uint32_t n4;
};

constexpr uint32_t kQ8Workgroup = 128;
// Counters for the last-workgroup epilogues: one per dispatch of a step, round robin, so
// dispatches of one stage never share one (each is left at zero by its last workgroup).
constexpr uint64_t kCounterBytes = 4096;
constexpr int64_t kQ8MaxTokens = 8;  // matvec_q8.comp's largest TOK

}  // namespace

bool VulkanBackend::q8_matvec_ok(const Graph& g, TensorId w_id, int64_t T) const {
    if (!q8_ || T < 1 || T > kQ8MaxTokens) return false;
    const WeightDesc& w = weight_desc(g, w_id);
    const uint32_t t = shader_type(g, w_id);
    if (t == repacked_type_id(DType::Q4_0) || t == repacked_type_id(DType::Q8_0)) return true;
    switch (w.type) {
        case DType::Q4_0:
        case DType::Q8_0:
            return w.ne[0] % 32 == 0;
        case DType::Q4_K:
        case DType::Q6_K:
            return w.ne[0] % 256 == 0;
        default:
            return false;
    }
}

bool VulkanBackend::q8_for_next_matmul(const Graph& g, size_t at, TensorId x) const {
    const std::vector<Node>& nodes = g.nodes();
    if (!fuse_ || at >= nodes.size()) return false;
    const Node& m = nodes[at];
    if (m.op != Op::MatMul || m.src[1] != x) return false;
    const GraphTensor& xt = g.tensor(x);
    return weight_desc(g, m.src[0]).ne[0] == xt.cols() && q8_matvec_ok(g, m.src[0], xt.rows());
}

VulkanBackend::Ref VulkanBackend::q8_ref(int64_t n_in, int64_t T) const {
    const auto values = uint64_t(n_in * T);
    return {kQ8Id, q8_buf_.address, 0, values + values / 4};
}

uint64_t VulkanBackend::q8_scales_address(int64_t n_in, int64_t T) const {
    return q8_buf_.address + uint64_t(n_in * T);
}

void VulkanBackend::ensure_q8_buffer(const Graph& g) {
    if (!q8_) return;
    uint64_t need = 0;
    for (const Node& n : g.nodes()) {
        if (n.op != Op::MatMul) continue;
        const GraphTensor& x = g.tensor(n.src[1]);
        if (q8_matvec_ok(g, n.src[0], x.rows()))
            need = std::max(need, q8_ref(x.cols(), x.rows()).size);
    }
    if (!counters_.buffer) {
        counters_ = ctx_->create_device_buffer(kCounterBytes, "workgroup counters");
        ctx_->fill_zero(counters_);
    }
    if (need <= q8_buf_.size) return;
    vkDeviceWaitIdle(ctx_->device());
    ctx_->destroy(q8_buf_);
    ++generation_;
    q8_buf_ = ctx_->create_device_buffer(std::max<uint64_t>(need, 64 << 10), "q8 activations");
}

void VulkanBackend::quantize_q8(const Ref& x, int64_t n_in, int64_t T) {
    if (q8_src_ == x.address && q8_src_cols_ == n_in && q8_src_rows_ == T) return;
    const Ref q = q8_ref(n_in, T);
    const auto n4 = u32(n_in * T / 4);
    QuantPush p{x.address, x.address, x.address, q.address, q8_scales_address(n_in, T), n4};
    dispatch("quantize_q8", {0u}, &p, sizeof p, (n4 + 255) / 256, 1, 1, {x}, {q});
    q8_src_ = x.address, q8_src_cols_ = n_in, q8_src_rows_ = T;
}

bool VulkanBackend::record_matvec_q8(const Graph& g, const Node* const* mats, size_t n,
                                     const NormEpilogue* epi) {
    const Node& first = *mats[0];
    if (epi && n != 1) return false;
    const GraphTensor& xt = g.tensor(first.src[1]);
    const int64_t T = xt.rows(), n_in = xt.cols();
    const Ref x = ref(g, first.src[1]);
    const uint32_t type = shader_type(g, first.src[0]);
    for (size_t k = 0; k < n; ++k)
        if (!q8_matvec_ok(g, mats[k]->src[0], T) || shader_type(g, mats[k]->src[0]) != type ||
            weight_desc(g, mats[k]->src[0]).ne[0] != n_in ||
            (n > 1 && mats[k]->src[2] != kNoTensor))
            return false;
    // quantize_q8.comp reads x as vec4s, unless the producer left the q8 values already.
    const bool quantised = q8_src_ == x.address && q8_src_cols_ == n_in && q8_src_rows_ == T;
    if (!quantised && x.address % 16 != 0) return false;
    quantize_q8(x, n_in, T);
    const Ref q = q8_ref(n_in, T);
    Q8MatPush p{};
    Ref outs[3];
    uint64_t rows = 0;
    for (size_t k = 0; k < n; ++k) {
        const Ref wr = ref(g, mats[k]->src[0]), y = ref(g, mats[k]->out);
        const auto n_out = u32(weight_desc(g, mats[k]->src[0]).ne[1]);
        rows += n_out;
        outs[k] = y;
        if (k == 0) {
            const Ref bias = ref(g, first.src[2]);
            const WeightDesc& w = weight_desc(g, first.src[0]);
            p.w = wr.address, p.xq = q.address, p.xd = q8_scales_address(n_in, T);
            p.y = y.address, p.bias = bias.buffer >= 0 ? bias.address : wr.address;
            p.n_in = u32(n_in), p.n_out = n_out, p.n_tok = u32(T);
            p.row_bytes = u32(row_bytes(w.type, uint64_t(w.ne[0])));
            p.has_bias = bias.buffer >= 0 ? 1u : 0u;
        } else {
            p.e[k - 1] = wr.address, p.e[k + 1] = y.address, p.u[k - 1] = n_out;
        }
    }
    Ref counter, q_out;
    if (epi) {
        counter = next_counter();
        q_out = epi->q8 ? q8_ref(epi->n_out, T) : Ref{};
        p.e[0] = epi->resid.address, p.e[1] = epi->sum.address;
        p.e[2] = epi->norm_w.buffer >= 0 ? epi->norm_w.address : epi->sum.address;
        p.e[3] = epi->normed.address, p.e[4] = counter.address;
        p.e[5] = epi->q8 ? q8_scales_address(epi->n_out, T) : 0;
        std::memcpy(&p.u[0], &epi->eps, sizeof(float));
        p.u[1] = epi->norm_w.buffer >= 0 ? 1u : 0u;
    }
    const uint32_t tok = T == 1 ? 1 : T == 2 ? 2 : T <= 4 ? 4 : 8;
    const uint32_t sg = pd_.subgroup_arithmetic && pd_.subgroup_size > 0 &&
                                (kQ8Workgroup / q8_rows_) % pd_.subgroup_size == 0
                            ? 1u
                            : 0u;
    const uint64_t groups = (rows + q8_rows_ - 1) / q8_rows_;
    const Ref bias = n == 1 ? ref(g, first.src[2]) : Ref{};
    const uint32_t epi_id = !epi ? 0u : epi->q8 ? 2u : 1u;
    dispatch("matvec_q8", {type, kQ8Workgroup, q8_rows_, tok, sg, uint32_t(n), epi_id}, &p,
             sizeof p, split_x(groups), 1, split_z(groups),
             {q, bias, epi ? epi->resid : Ref{}, epi ? epi->norm_w : Ref{}},
             {outs[0], n > 1 ? outs[1] : Ref{}, n > 2 ? outs[2] : Ref{}, epi ? epi->sum : Ref{},
              epi ? epi->normed : Ref{}, q_out, counter});
    // An output written over its own input leaves q8_buf_ stale for that memory.
    for (size_t k = 0; k < n; ++k)
        if (overlap(outs[k], x) || (epi && overlap(epi->sum, x))) q8_src_ = 0;
    if (epi && epi->q8) q8_src_ = epi->normed.address, q8_src_cols_ = epi->n_out, q8_src_rows_ = T;
    return true;
}

VulkanBackend::Ref VulkanBackend::next_counter() {
    const uint64_t slot = counter_next_++ % (counters_.size / sizeof(uint32_t));
    return {kCounterId, counters_.address + slot * 4, slot * 4, 4};
}

// A MatMul (o, down projection), the no-op AllReduce of one rank, the residual Add of its
// output and the RMSNorm of the sum (the next layer's input norm): one matvec_q8 dispatch whose
// last workgroup does the norm (EPI), also quantising it when a q8 matmul reads it next.
// Returns the nodes recorded (0: none).
size_t VulkanBackend::try_fuse_matvec_add_norm(const Graph& g, size_t at) {
    const std::vector<Node>& nodes = g.nodes();
    const Node& m = nodes[at];
    if (!q8_ || !fuse_ || m.op != Op::MatMul || !counters_.buffer) return 0;
    size_t k = at + 1;
    const bool one_rank = !collective_ || collective_->n_ranks() <= 1;
    if (k < nodes.size() && nodes[k].op == Op::AllReduce && nodes[k].src[0] == m.out &&
        nodes[k].out == m.out && one_rank)
        ++k;
    if (k + 1 >= nodes.size()) return 0;
    const Node &add = nodes[k], &norm = nodes[k + 1];
    if (add.op != Op::Add || norm.op != Op::RmsNorm || norm.src[0] != add.out) return 0;
    if ((add.src[0] == m.out) == (add.src[1] == m.out)) return 0;
    const TensorId resid = add.src[0] == m.out ? add.src[1] : add.src[0];
    const GraphTensor &out = g.tensor(m.out), &rt = g.tensor(resid);
    const int64_t n_out = out.cols(), T = out.rows();
    if (rt.cols() != n_out || rt.rows() != T || n_out % 32 != 0 ||
        (norm.i[0] > 0 && norm.i[0] != n_out))
        return 0;
    NormEpilogue e{
        ref(g, resid), ref(g, add.out), ref(g, norm.src[1]), ref(g, norm.out), n_out, norm.f[0],
        false};
    const Ref y = ref(g, m.out);
    // Workgroups write y and sum row by row while others read resid: only the same memory
    // (in place) may be shared; the norm (last workgroup, two passes per thread) may write over
    // the sum in place, and over anything the others have finished with.
    auto same_or_apart = [](const Ref& p, const Ref& q) {
        return !overlap(p, q) || p.offset == q.offset;
    };
    if (!same_or_apart(e.sum, e.resid) || !same_or_apart(e.sum, y) || !same_or_apart(y, e.resid) ||
        !same_or_apart(e.normed, e.sum))
        return 0;
    if (((e.sum.address | e.normed.address | (e.norm_w.buffer >= 0 ? e.norm_w.address : 0)) & 15) !=
        0)
        return 0;
    e.q8 = q8_for_next_matmul(g, k + 2, norm.out);
    const Node* self = &m;
    if (!record_matvec_q8(g, &self, 1, &e)) return 0;
    return k + 2 - at;
}

bool VulkanBackend::try_q8_producer(const Graph& g, size_t at) {
    const Node& n = g.nodes()[at];
    if (!q8_ || !q8_for_next_matmul(g, at + 1, n.out)) return false;
    const GraphTensor& out = g.tensor(n.out);
    const int64_t cols = out.cols(), rows = out.rows();
    const Ref a = ref(g, n.src[0]), y = ref(g, n.out);
    const Ref q = q8_ref(cols, rows);
    if (cols % 32 != 0) return false;
    if (n.op == Op::GatedAct) {
        const Ref b = ref(g, n.src[1]);
        if (((a.address | b.address | y.address) & 15) != 0 || b.buffer < 0) return false;
        const auto n4 = u32(cols * rows / 4);
        const uint32_t op = n.i[0] == int(Activation::Silu) ? 4u : 5u;  // eltwise.comp's ids
        QuantPush p{a.address, b.address, y.address, q.address, q8_scales_address(cols, rows), n4};
        dispatch("quantize_q8", {op}, &p, sizeof p, (n4 + 255) / 256, 1, 1, {a, b}, {y, q});
    } else if (n.op == Op::RmsNorm) {
        const Ref w = ref(g, n.src[1]);
        if (n.i[0] > 0 && n.i[0] != cols) return false;
        if (!rms_on_registers(cols, a, w, y, Ref{}, Ref{})) return false;
        record_rms_norm(a, w, y, Ref{}, Ref{}, cols, uint64_t(rows), n.f[0], true);
    } else if (n.op == Op::Attention) {
        // Recorded either way; the q8 values only come out of the split-K path.
        if (!record_attention(g, n, true)) return true;
    } else {
        return false;
    }
    q8_src_ = y.address, q8_src_cols_ = cols, q8_src_rows_ = rows;
    return true;
}

}  // namespace tandem::vk
