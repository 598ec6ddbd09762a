// The int8-dot decode matvec (matvec_q8.comp): which matmuls take it, the activation buffer
// it reads (quantised by quantize_q8.comp, or left by the RMSNorm / gated activation before
// the matmul), and its dispatch.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "tandem/backend/collective.h"
#include "tandem/backend/fusion.h"
#include "vk_backend.h"
#include "vk_grid.h"
#include "vk_repack.h"

namespace tandem::vk {
namespace {

struct Q8MatPush {
    uint64_t w, xq, xd, y, bias;
    uint32_t n_in, n_out, n_tok, row_bytes;
    uint32_t has_bias;  // bit k: part k's bias
    uint32_t n_out1;
    uint64_t w1, w2, y1, y2, bias1, bias2;  // PARTS > 1
    uint64_t io;                            // ROPE: step parameters and cos/sin table
    uint32_t n_out2, rope;                  // rope: see QkvRope::params
};
static_assert(offsetof(Q8MatPush, w1) == 64 && offsetof(Q8MatPush, n_out2) == 120 &&
              sizeof(Q8MatPush) == 128);
static_assert(sizeof(Q8MatPush) <= kPushConstantBytes);

struct QuantPush {
    uint64_t a, b, y, qs, ds;
    uint32_t n4;
};

constexpr uint32_t kQ8Workgroup = 128;
// Rows at least this long (70B's 8192) take 4 rows of 64 invocations (q8_rows_for, q8_share_wg).
constexpr int64_t kQ8WideRow = 8192;
constexpr int64_t kQ8MaxTokens = 8;  // matvec_q8.comp's largest TOK

}  // namespace

// The int8 values take whole groups of the halves layout (q8_act.glsl: the last group's
// second halves lie past a partial group's values), then 8 bytes of (d, s) per 32 values.
uint64_t VulkanBackend::q8_values_bytes(uint64_t values) {
    constexpr uint64_t kGroup = 256;
    return (values + kGroup - 1) / kGroup * kGroup;
}

bool VulkanBackend::q8_items_read(uint32_t t, DType type, int64_t n_in) {
    if (t == repacked_type_id(DType::Q4_0) || t == repacked_type_id(DType::Q8_0)) return true;
    switch (type) {
        case DType::Q4_0:
        case DType::Q8_0:
            return n_in % 32 == 0;
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
            return n_in % 256 == 0;
        default:
            return false;
    }
}

bool VulkanBackend::q8_matvec_ok(const Graph& g, TensorId w_id, int64_t T) const {
    if (!q8_ || T < 1 || T > kQ8MaxTokens) return false;
    const WeightDesc& w = weight_desc(g, w_id);
    return q8_items_read(shader_type(g, w_id), w.type, w.ne[0]);
}

void VulkanBackend::record_quantize_q8(const Ref& a, const Ref& b, const Ref& y, const Ref& q,
                                       uint64_t ds, uint64_t n, uint32_t op) {
    const auto n4 = u32(int64_t(n / 4));
    const QuantPush p{a.address, b.address, y.address, q.address, ds, n4};
    if (op == 0)
        dispatch("quantize_q8", {0u}, &p, sizeof p, (n4 + 255) / 256, 1, 1, {a}, {q});
    else
        dispatch("quantize_q8", {op}, &p, sizeof p, (n4 + 255) / 256, 1, 1, {a, b}, {y, q});
}

bool VulkanBackend::q8_for_next_matmul(const Graph& g, size_t at, TensorId x) const {
    const std::vector<Node>& nodes = g.nodes();
    if (!fuse_ || at >= nodes.size()) return false;
    const Node& m = nodes[at];
    if (m.op != Op::MatMul || m.src[1] != x) return false;
    const GraphTensor& xt = g.tensor(x);
    return weight_desc(g, m.src[0]).ne[0] == xt.cols() && q8_matvec_ok(g, m.src[0], xt.rows());
}

VulkanBackend::Ref VulkanBackend::q8_ref(int64_t n_in, int64_t T, bool alt) const {
    const auto values = uint64_t(n_in * T);
    const uint64_t at = alt ? q8_half_ : 0;
    return {kQ8Id, q8_buf_.address + at, at, q8_values_bytes(values) + values / 2};
}

uint64_t VulkanBackend::q8_scales_address(int64_t n_in, int64_t T, bool alt) const {
    return q8_buf_.address + (alt ? q8_half_ : 0) + q8_values_bytes(uint64_t(n_in * T));
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
    need = (std::max<uint64_t>(need, 32 << 10) + 255) / 256 * 256;
    if (grow_device_buffer(q8_buf_, 2 * need, "q8 activations"))
        q8_half_ = need;  // two regions: the quantisers' and matvec_q8 RESID's
}

void VulkanBackend::quantize_q8(const Ref& x, int64_t n_in, int64_t T) {
    if (q8_src_ == x.address && q8_src_cols_ == n_in && q8_src_rows_ == T) return;
    // A folded norm's output whose activations are gone: write it, then quantise it.
    if (pending_norm_.id != kNoTensor && pending_norm_.y.address == x.address) materialise_norm();
    q8_alt_ = false;
    record_quantize_q8(x, x, x, q8_ref(n_in, T), q8_scales_address(n_in, T), uint64_t(n_in * T), 0);
    q8_src_ = x.address, q8_src_cols_ = n_in, q8_src_rows_ = T;
}

namespace {
// Q8_0 in the file layout or repacked: the one type that never shares items across rows.
bool is_q8_0(uint32_t type) {
    return type == uint32_t(DType::Q8_0) || type == repacked_type_id(DType::Q8_0);
}
bool is_k45(uint32_t type) {
    return type == uint32_t(DType::Q4_K) || type == uint32_t(DType::Q5_K);
}
}  // namespace

uint32_t VulkanBackend::k64_items(uint32_t type) const {
    return q8_k64_ && is_k45(type) ? 1u : 0u;
}

// matvec_q8.comp's SHARE split: one or two tokens (it holds every token's activations of an
// item in registers), subgroup sums (its reduction), subgroups of at least `rows` invocations
// (its shared array). Not Q8_0, whose 34 weight bytes per 32 meet only 34 bytes of
// activations: sharing them lost 2 % on the H200 (8B tg128 276 against 283 tok/s).
// Rows of fewer items (q8_items.glsl's items_per_row) than a workgroup's invocations: repacked
// Q6_K's and (K64) Q4_K / Q5_K's 64-weight items under 8192 inputs (Llama 3.1 8B's 4096), the
// 32-weight items under 4096 (a 2048-input row of Q4_0: Qwen3-30B-A3B's q/k/v and LM head,
// Llama 3.2 1B's matvecs). The shared
// split would leave the rest idle; the per-row split at 8 rows keeps them all (q8_shares,
// q8_rows_for; qkv_rope_plan takes the same rows). Not Q8_0, which never shares: at 2048 inputs
// its 64 invocations a row (2 rows) already have an item each, and 8 rows gained nothing (H200,
// Llama 3.2 1B Q8_0 tg128 1092 against 1101). q8_few_ off (TANDEM_VK_Q8_FEW=0) limits it to
// repacked Q6_K, for tuning.
bool VulkanBackend::few_items_per_row(uint32_t type, int64_t n_in) const {
    const bool wide = type == repacked_type_id(DType::Q6_K) || k64_items(type);
    if (!wide && (!q8_few_ || is_q8_0(type))) return false;
    const int64_t items = type == uint32_t(DType::Q6_K) ? n_in / 16 : wide ? n_in / 64 : n_in / 32;
    return items < kQ8Workgroup;
}

bool VulkanBackend::q8_shares(uint32_t type, uint32_t rows, int64_t T, int64_t n_in) const {
    if (few_items_per_row(type, n_in)) return false;
    return q8_share_ && T <= 2 && !is_q8_0(type) && pd_.subgroup_arithmetic &&
           pd_.subgroup_size >= rows && kQ8Workgroup % pd_.subgroup_size == 0;
}

// Rows per workgroup: q8_rows_, or 8 for repacked Q6_K on the per-row split (q8_shares: 64
// items a row at 4096 inputs, 16 invocations a row then take 4 each). H200, 8B Q6_K tg128 at
// 2 / 4 / 8 rows (docs/vulkan.md, session 15): 284 / 288 / 307 tok/s; the LM head 166 / 143 /
// 131 µs. Q8_0 (plain or repacked), which never shares, takes 4: a subgroup of 32 a row rather
// than 64 invocations (H200, 8B Q8_0 tg128, session 30: docs/vulkan.md). Rows of 8192+ inputs
// (70B's q/k/v, gate / up, LM head) take at least 4, with q8_share_wg's 64 invocations. At 2
// rows of 128 the shared split's invocation has one or two items a row, too few loads in flight:
// H200, 70B tg64 against 2 rows of 128, both steps: Q4_K 66.1 -> 68.9 tok/s, Q4_0 71.0 -> 72.5
// (docs/vulkan.md, session 34). 8B's matvecs read 4096 inputs (its 14336-input down
// projection is RESID's, 4 rows a group). TANDEM_VK_Q8_ROWS sets every type's. at_least: a
// lower bound (v's rows in a q/k/v launch: whole f16 words).
uint32_t VulkanBackend::q8_rows_for(uint32_t type, int64_t n_in, uint32_t at_least) const {
    uint32_t rows = q8_rows_;
    if (!q8_rows_set_ && n_in >= kQ8WideRow) rows = std::max(rows, 4u);
    if (!q8_rows_set_ && few_items_per_row(type, n_in)) rows = 8;
    if (!q8_rows_set_ && is_q8_0(type)) rows = 4;
    return std::max(rows, at_least);
}

// The shared split's invocations (a multiple of the subgroup size): 64 for rows of 8192+ inputs
// (q8_rows_for), two items a row each where 128 would have one (a 64-weight item of 70B's Q4_K);
// 128 below, where 8B's Q4_0 ran the same at either (H200 tg128 432 / 429 tok/s).
// TANDEM_VK_Q8_WG = 64 / 128 / 256 sets it, for tuning.
uint32_t VulkanBackend::q8_share_wg(int64_t n_in) const {
    if (q8_share_wg_ != 0) return q8_share_wg_;
    return n_in >= kQ8WideRow && 64 % pd_.subgroup_size == 0 ? 64u : kQ8Workgroup;
}

bool VulkanBackend::record_matvec_q8(const Graph& g, const Node* const* mats, size_t n,
                                     const QkvRope* rope) {
    const Node& first = *mats[0];
    if (rope && (rope->v_only ? n != 1 : n < 2)) return false;
    const GraphTensor& xt = g.tensor(first.src[1]);
    const int64_t T = xt.rows(), n_in = xt.cols();
    const Ref x = ref(g, first.src[1]);
    const uint32_t type = shader_type(g, first.src[0]);
    for (size_t k = 0; k < n; ++k)
        if (!q8_matvec_ok(g, mats[k]->src[0], T) || shader_type(g, mats[k]->src[0]) != type ||
            weight_desc(g, mats[k]->src[0]).ne[0] != n_in)
            return false;
    // quantize_q8.comp reads x as vec4s, unless the producer left the q8 values already.
    const bool quantised = q8_src_ == x.address && q8_src_cols_ == n_in && q8_src_rows_ == T;
    if (!quantised && x.address % 16 != 0) return false;
    quantize_q8(x, n_in, T);
    // A folded norm (try_fuse_resid_norm) is applied to the sums: its eps's bits.
    const bool norm =
        q8_alt_ && pending_norm_.id != kNoTensor && pending_norm_.y.address == x.address;
    const uint32_t norm_eps = norm ? std::bit_cast<uint32_t>(pending_norm_.eps) : 0u;
    const Ref q = q8_ref(n_in, T, q8_alt_);
    Q8MatPush p{};
    Ref outs[3];
    uint64_t rows = 0;
    uint64_t* biases[3] = {&p.bias, &p.bias1, &p.bias2};
    for (size_t k = 0; k < n; ++k) {
        const Ref wr = ref(g, mats[k]->src[0]), y = ref(g, mats[k]->out);
        const Ref bias = ref(g, mats[k]->src[2]);  // a weight: never a hazard
        const auto n_out = u32(weight_desc(g, mats[k]->src[0]).ne[1]);
        rows += n_out;
        outs[k] = y;
        *biases[k] = bias.buffer >= 0 ? bias.address : wr.address;
        p.has_bias |= bias.buffer >= 0 ? 1u << k : 0u;
        if (k == 0) {
            const WeightDesc& w = weight_desc(g, first.src[0]);
            p.w = wr.address, p.xq = q.address, p.xd = q8_scales_address(n_in, T, q8_alt_);
            p.y = y.address;
            p.n_in = u32(n_in), p.n_out = n_out, p.n_tok = u32(T);
            p.row_bytes = u32(row_bytes(w.type, uint64_t(w.ne[0])));
        } else if (k == 1) {
            p.w1 = wr.address, p.y1 = y.address, p.n_out1 = n_out;
        } else {
            p.w2 = wr.address, p.y2 = y.address, p.n_out2 = n_out;
        }
    }
    const uint32_t wg_rows =
        rope && !rope->v_only ? rope->rows : q8_rows_for(type, n_in, rope ? rope->rows : 0);
    if (rope) {
        p.io = io_.address, p.rope = rope->params;
        if (rope->v_only) {  // the shader's part 2 (rope_part)
            p.y2 = rope->v_cache.address, p.n_out2 = p.n_out, outs[0] = rope->v_cache;
        } else {
            p.y = rope->q_rope.address, p.y1 = rope->k_cache.address;
            outs[0] = rope->q_rope, outs[1] = rope->k_cache;
            if (n == 3) p.y2 = rope->v_cache.address, outs[2] = rope->v_cache;
        }
    }
    const uint32_t tok = T == 1 ? 1 : T == 2 ? 2 : T <= 4 ? 4 : 8;
    const uint32_t share = q8_shares(type, wg_rows, T, n_in) ? 1u : 0u;
    const uint32_t wg = share ? q8_share_wg(n_in) : kQ8Workgroup;
    const uint32_t sg = subgroups_tile(wg / wg_rows) ? 1u : 0u;
    const uint64_t groups = (rows + wg_rows - 1) / wg_rows;
    dispatch("matvec_q8",
             {type, wg, wg_rows, tok, sg, uint32_t(n), rope ? 1u : 0u, share, 0u, norm_eps,
              k64_items(type)},
             &p, sizeof p, split_x(groups), 1, split_z(groups), {q},
             {outs[0], n > 1 ? outs[1] : Ref{}, n > 2 ? outs[2] : Ref{}});
    // An output written over its own input leaves q8_buf_ stale for that memory.
    for (size_t k = 0; k < n; ++k)
        if (overlap(outs[k], x)) q8_src_ = 0;
    return true;
}

// q, k, v (nodes[at..at+2]) with their ropes and KV stores after them (match_qkv_rope): the
// matvec ropes and stores them itself (ROPE) when cos/sin come from the host's table (host
// positions) and its workgroups can hold whole rotation pairs.
bool VulkanBackend::qkv_rope_plan(const Graph& g, size_t at, QkvRope* plan) const {
    if (!fuse_ || !q8_rope_) return false;
    const auto m = match_qkv_rope(g, at);
    if (!m || m->head_dim % 4 != 0 || m->head_dim > 256) return false;
    const auto tq = rope_table_.find(m->rope_q), tk = rope_table_.find(m->rope_k);
    if (tq == rope_table_.end() || tk == rope_table_.end() || tq->second != tk->second)
        return false;
    // Whole pairs per workgroup; NeoX f16 words need two adjacent pairs' halves. At least the
    // rows a plain q/k/v dispatch takes (q8_rows_for), so both sum in one order: the same bits.
    const int64_t n_in = g.tensor(m->q->src[1]).cols();
    const uint32_t rows =
        q8_rows_for(shader_type(g, m->q->src[0]), n_in, m->neox && m->cache_f16 ? 4 : 2);
    if (m->head_dim % int32_t(rows) != 0) return false;
    // The table's offset in io_ in 256-byte units (io slots are kIoAlign-aligned) above the
    // head_dim and the two flags.
    static_assert(kIoAlign == 256);
    if (tq->second % kIoAlign != 0 || tq->second / kIoAlign >= (1u << 21)) return false;
    plan->q_rope = ref(g, m->rope_q->out);
    plan->k_cache = ref(g, m->store_k->src[1]);
    plan->v_cache = ref(g, m->store_v->src[1]);
    plan->params = uint32_t(m->head_dim) | (m->neox ? 1u << 9 : 0u) |
                   (m->cache_f16 ? 1u << 10 : 0u) | uint32_t(tq->second / kIoAlign) << 11;
    plan->rows = rows;
    return true;
}

// The RESID dispatch: workgroups of 1024 invocations (eight groups of 128 over 4 rows each,
// main_share's loop), 32 rows each, their quantiser's 8-lane shuffles; the matvecs after it
// reduce the norm's sums with subgroupAdd.
size_t VulkanBackend::try_fuse_resid_norm(const Graph& g, size_t at) {
    // Rows of a multiple of 64: the readers take the block sums two at a time.
    constexpr uint32_t kResidWorkgroup = 1024, kResidRows = 32, kResidCols = 64;
    const Node& first = g.nodes()[at];
    if (!fuse_ || !q8_ || !norm_fuse_ || first.op != Op::MatMul || !pd_.subgroup_arithmetic ||
        pd_.subgroup_size < 8 || kQ8Workgroup % pd_.subgroup_size != 0 ||
        pd_.max_workgroup_invocations < kResidWorkgroup || g.tensor(first.src[1]).rows() > 2)
        return 0;
    const auto m =
        match_matvec_resid_norm(g, at, uses_, !collective_ || collective_->n_ranks() <= 1);
    if (!m) return 0;
    const Node &mm = *m->mm, &norm = *m->norm;
    const GraphTensor& xt = g.tensor(mm.src[1]);
    const int64_t T = xt.rows(), n_in = xt.cols(), cols = g.tensor(mm.out).cols();
    const WeightDesc& w = weight_desc(g, mm.src[0]);
    if (w.ne[0] != n_in || cols % kResidCols != 0 || !q8_matvec_ok(g, mm.src[0], T) ||
        !q8_for_next_matmul(g, at + m->nodes, norm.out))
        return 0;
    const Ref x = ref(g, mm.src[1]), r = ref(g, m->resid), sum = ref(g, m->add->out);
    const Ref nw = ref(g, norm.src[1]), bias = ref(g, mm.src[2]), wr = ref(g, mm.src[0]);
    if (overlap(sum, r) && sum.offset != r.offset) return 0;  // in place or apart
    if (pending_norm_.id != kNoTensor && pending_norm_.y.address == x.address) return 0;
    const bool quantised = q8_src_ == x.address && q8_src_cols_ == n_in && q8_src_rows_ == T;
    if (!quantised && x.address % 16 != 0) return 0;
    if (pending_norm_.id != kNoTensor) materialise_norm();  // one pending norm at a time
    quantize_q8(x, n_in, T);
    const Ref q = q8_ref(n_in, T), out = q8_ref(cols, T, true);
    Q8MatPush p{};
    p.w = wr.address, p.xq = q.address, p.xd = q8_scales_address(n_in, T);
    p.y = sum.address, p.y1 = r.address;
    p.bias = bias.buffer >= 0 ? bias.address : wr.address;
    p.bias1 = nw.buffer >= 0 ? nw.address : wr.address;
    p.has_bias = (bias.buffer >= 0 ? 1u : 0u) | (nw.buffer >= 0 ? 2u : 0u);
    p.w1 = out.address, p.w2 = q8_scales_address(cols, T, true);
    p.n_in = u32(n_in), p.n_out = u32(cols), p.n_tok = u32(T);
    p.row_bytes = u32(row_bytes(w.type, uint64_t(w.ne[0])));
    const uint64_t groups = uint64_t(cols) / kResidRows;
    const uint32_t type = shader_type(g, mm.src[0]);
    dispatch("matvec_q8",
             {type, kResidWorkgroup, 4u, T == 1 ? 1u : 2u, 1u, 1u, 0u, 1u, 1u, 0u, k64_items(type)},
             &p, sizeof p, split_x(groups), 1, split_z(groups), {q, r}, {sum, out});
    pending_norm_ = PendingNorm{norm.out, m->last, ref(g, norm.out), sum, nw, cols, T, norm.f[0]};
    q8_src_ = pending_norm_.y.address, q8_src_cols_ = cols, q8_src_rows_ = T;
    q8_alt_ = true;
    return m->nodes;
}

void VulkanBackend::materialise_norm() {
    const PendingNorm pn = pending_norm_;
    pending_norm_ = PendingNorm{};
    if (q8_src_ == pn.y.address) q8_src_ = 0;  // the alt activations hold x * w, not the norm
    record_rms_norm(pn.x, pn.w, pn.y, Ref{}, Ref{}, pn.cols, uint64_t(pn.rows), pn.eps, false);
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
        record_quantize_q8(a, b, y, q, q8_scales_address(cols, rows), uint64_t(cols * rows),
                           gated_q8_op(n.i[0]));
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
    q8_alt_ = false;
    return true;
}

}  // namespace tandem::vk
