// Records one graph node as compute dispatches. Push-constant structs mirror the shaders'
// push_constant blocks (device addresses first, then 32-bit fields).
#include <algorithm>
#include <cstddef>

#include "tandem/backend/collective.h"
#include "tandem/backend/fusion.h"
#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "vk_backend.h"
#include "vk_grid.h"

namespace tandem::vk {
namespace {

uint32_t eltwise_groups(uint64_t n) {
    return static_cast<uint32_t>(std::clamp<uint64_t>((n + 255) / 256, 1, 4096));
}

enum EltOp : uint32_t {
    kAdd = 0,
    kMul = 1,
    kScale = 2,
    kSoftcap = 3,
    kSilu = 4,
    kGelu = 5,
    kCopy = 6
};

struct EltPush {
    uint64_t a, b, y;
    uint32_t n;
    float f;
};
struct RmsPush {
    uint64_t x, w, y, b, s;  // b, s: the fused residual add (ADD), else unused
    uint32_t group, n_groups;
    float eps;
    uint32_t has_w;
    uint64_t qs, ds;  // Q8: the output's q8 activations
};
struct SplitSumPush {
    uint64_t parts, bias, y;
    uint32_t n, n_out, splits, has_bias;
};
struct RowsPush {
    uint64_t w, ids, y;
    uint32_t n_embd, row_bytes;
};
// matvec.comp with PARTS = 2, 3: the second and third matrices after MatPush's first (the
// shader's block continues at offset 56, where C++ puts w1 after MatPush's tail padding).
struct MatPartsPush {
    MatPush first;
    uint64_t w1, w2, y1, y2;
    uint32_t n_out1, n_out2;
};
static_assert(offsetof(MatPartsPush, w1) == 56 && sizeof(MatPartsPush) == 96);
struct RopePush {
    uint64_t x, pos, ff, y, table;
    uint32_t n_tok, n_head, head_dim, n_rot, neox, has_ff, has_table;
    float freq_base, freq_scale;
    uint64_t cache, step;  // STORE: the KV cache the rows also go to, the step parameters
};
static_assert(offsetof(RopePush, cache) == 80 && sizeof(RopePush) <= kPushConstantBytes);
// `step`: the StepParams (n_past) in the io buffer, so recorded commands serve every step.
struct KvPush {
    uint64_t x, cache, step;
    uint32_t n, width;
};
struct SplitAttnPush {
    uint64_t q, k, v, part, step;
    uint32_t n_tok, n_head, n_kv_head, head_dim, window, n_split;
    float scale, softcap;
    uint64_t tickets, y, qs, ds;  // merge only; qs / ds with q8
    uint32_t merge, q8;
    uint32_t q_vec4;  // the query's rows start on 16 bytes
};
static_assert(sizeof(SplitAttnPush) <= kPushConstantBytes);
struct CombinePush {
    uint64_t part, y;
    uint32_t n_tok, n_head, head_dim, n_split;
    uint64_t qs, ds;  // Q8: the output's q8 activations
};
struct QkNormRopePush {
    uint64_t q, k, v, qw, kw, table, q_out, k_cache, v_cache, step;
    uint32_t n_head, n_kv_head, head_dim, neox;
    float eps;
    uint32_t has_qw, has_kw;
};
static_assert(sizeof(QkNormRopePush) <= kPushConstantBytes);
constexpr uint32_t kQkNormGroup = 64;  // qk_norm_rope.comp: rms_norm.comp's per-head size

struct RoutePush {
    uint64_t logits, route;
    uint32_t n_tok, n_expert, k, normalize;
};
struct GateUpPush {
    uint64_t gate, up, x, route, h;
    uint32_t n_embd, n_ff, k, first_expert, n_local, gate_row_bytes, up_row_bytes, act_id;
};
struct DownPush {
    uint64_t down, h, route, y;
    uint32_t n_ff, n_embd, k, first_expert, n_local, row_bytes;
};
static_assert(sizeof(GateUpPush) <= kPushConstantBytes);

// Query heads per attention_split.comp workgroup: its registers hold 2 x heads x head_dim / 8
// floats per invocation (q and the accumulators).
uint32_t split_heads(int64_t group, int64_t head_dim) {
    return static_cast<uint32_t>(std::min<int64_t>(group, head_dim <= 128 ? 4 : 2));
}

}  // namespace

// Split-K pays off when a step has few query tokens: about 256 workgroups (n_kv_head x head
// blocks x splits), each split at least 16 positions of the context. (An H200 sweep, 8B Q4_0
// tg64 after pp512, 8 KV heads, tok/s for 8 / 16 / 32 / 64 splits: 327 / 337 / 337 / 327; the
// attention node took 13.2 us at 16 splits against 18.0 at 64: more splits than that only add
// merge work and a second wave of workgroups.)
// attention_split.comp needs head_dim % 16 == 0 (<= 256), whole GQA groups and subgroup
// shuffles over clusters of 8 lanes.
uint32_t VulkanBackend::attention_splits(const Graph& g, const Node& n) const {
    const int64_t T = g.tensor(n.out).rows(), n_head = n.i[0], n_kv = n.i[1], hd = n.i[2];
    if (splitk_force_ == 0 || !clusters_of_8(pd_) || T > 4 || hd % 16 != 0 || hd > 256 ||
        n_kv <= 0 || n_head % n_kv != 0)
        return 0;
    if (splitk_force_ > 0) return static_cast<uint32_t>(std::min(splitk_force_, 256));
    const int64_t hb = split_heads(n_head / n_kv, hd), blocks = (n_head / n_kv + hb - 1) / hb;
    const int64_t n_ctx = g.tensor(n.src[1]).rows();
    const int64_t by_gpu = std::max<int64_t>(1, 256 / (n_kv * blocks * T));
    return static_cast<uint32_t>(std::clamp<int64_t>(std::min(by_gpu, (n_ctx + 15) / 16), 1, 64));
}

// attention_flash.comp: 32 clusters of 8 lanes a workgroup of 256 (head_dim % 32 == 0), each
// with flash_rows_per_cluster() query rows; K and V tiles of BC positions in shared memory as
// f32, 32 where 2 x 32 x head_dim floats fit, else 16. 0: the one-row-per-workgroup
// attention.comp.
uint32_t VulkanBackend::flash_attention_tile(const Graph& g, const Node& n) const {
    const int64_t n_head = n.i[0], n_kv = n.i[1], hd = n.i[2];
    if (flash_mode_ == 0 || !clusters_of_8(pd_) || pd_.max_workgroup_invocations < 256 ||
        hd % 32 != 0 || hd > 256 || n_kv <= 0 || n_head % n_kv != 0 ||
        attention_row_tiles(g, n, kFlashClusters) > 65535)
        return 0;
    for (const uint32_t bc : {32u, 16u})
        if (2 * uint64_t(bc) * uint64_t(hd) * sizeof(float) <= pd_.max_shared_bytes) return bc;
    return 0;
}

// attention_flash_coopmat.comp: 64 query rows a workgroup (4 subgroups of 32 with 16 rows each),
// f16 cache, head_dim % 16 == 0 up to 128 (its registers hold q and the output as head_dim / 16
// fragments each), where the device has the prefill matmul's cooperative matrices.
bool VulkanBackend::flash_coopmat_fits(const Graph& g, const Node& n) const {
    const int64_t n_head = n.i[0], n_kv = n.i[1], hd = n.i[2];
    return flash_mode_ == 2 && flash_coopmat_ok_ && coopmat_ok_ && pd_.coopmat_f16 &&
           g.tensor(n.src[1]).type == DType::F16 && g.tensor(n.src[2]).type == DType::F16 &&
           hd % 16 == 0 && hd <= 128 && n_kv > 0 && n_head % n_kv == 0 &&
           attention_row_tiles(g, n, kFlashCoopmatRows) <= 65535;
}

// flash_coopmat_fits(), its check on first use passed and its pipeline built; else the path goes
// off with a log line (attention_flash.comp instead).
bool VulkanBackend::flash_attention_coopmat(const Graph& g, const Node& n) {
    if (!flash_coopmat_fits(g, n)) return false;
    const uint32_t hd = u32(n.i[2]);
    const std::string why =
        first_use_why_not(flash_coopmat_checked_, [this, hd] { return flash_coopmat_check(hd); },
                          "attention_flash_coopmat", {hd / 16});
    if (why.empty()) return true;
    flash_coopmat_ok_ = false;
    info_.f16_prefill_attention = false;
    log_info("vulkan: prefill attention without cooperative matrices: " + why);
    return false;
}

InputSplit VulkanBackend::tiled_split(int64_t n_in, int64_t n_out, int64_t n_tok) {
    const int64_t groups = n_in / 32, wgs = ((n_out + 63) / 64) * ((n_tok + 63) / 64);
    return split_inputs(wgs, groups, 1, groups / 4);
}

InputSplit VulkanBackend::coopmat_split(int64_t n_in, int64_t n_out, int64_t n_tok) const {
    // Parts of whole 64-input steps (the kernel's), at least two of them each.
    const int64_t groups = n_in / 32, wgs = ((n_out + 127) / 128) * ((n_tok + 63) / 64);
    return split_inputs(wgs, groups, 2, groups / 4, split_workgroups_);
}

void VulkanBackend::ensure_x16_buffer(const Graph& g) {
    if (!coopmat_x16_) return;
    uint64_t need = 0;
    for (const Node& n : g.nodes()) {
        if (n.op != Op::MatMul) continue;
        const GraphTensor& x = g.tensor(n.src[1]);
        if (plan_matmul(weight_desc(g, n.src[0]), x.rows()).coopmat)
            need = std::max(need, uint64_t(x.n_elements()) * 2);
    }
    grow_device_buffer(x16_buf_, need, "prefill activations as f16");
}

VulkanBackend::Ref VulkanBackend::f16_input(const Ref& x, int64_t rows, int64_t n_in) {
    const uint64_t n = uint64_t(rows * n_in);
    if (!coopmat_x16_ || n * 2 > x16_buf_.size || n_in % 8 != 0) return {};
    const Ref y{kX16Id, x16_buf_.address, 0, n * 2};
    if (x16_src_ == x.address && x16_rows_ == rows && x16_cols_ == n_in) return y;
    struct {
        uint64_t x, y;
        uint32_t n8;
    } p{x.address, y.address, u32(int64_t(n / 8))};
    const uint64_t groups = (n / 8 + 255) / 256;
    dispatch("to_f16", {}, &p, sizeof p, split_x(groups), 1, split_z(groups), {x}, {y});
    x16_src_ = x.address, x16_rows_ = rows, x16_cols_ = n_in;
    return y;
}

void VulkanBackend::ensure_split_buffer(const Graph& g) {
    if (!matmul_split_) return;
    uint64_t need = 0;
    for (const Node& n : g.nodes()) {
        if (n.op != Op::MatMul) continue;
        const WeightDesc& w = weight_desc(g, n.src[0]);
        const int64_t T = g.tensor(n.src[1]).rows();
        const MatmulPlan plan = plan_matmul(w, T);
        if (!plan.tiled) continue;
        // (A cooperative-matrix plan whose check fails turns tiled while recording: room for
        // either.)
        uint64_t floats = split_part_floats(tiled_split(w.ne[0], w.ne[1], T), T, w.ne[1]);
        if (plan.coopmat)
            floats =
                std::max(floats, split_part_floats(coopmat_split(w.ne[0], w.ne[1], T), T, w.ne[1]));
        need = std::max(need, floats * 4);
    }
    grow_device_buffer(split_buf_, need, "split matmul parts");
}

// Split: the parts into split_buf_ (sized by ensure_split_buffer; grid z: the part), then
// split_sum.comp's sum in part order with the bias into y.
void VulkanBackend::record_prefill_matmul(const char* shader, const std::vector<uint32_t>& spec,
                                          const MatPush& p, const InputSplit& split, uint32_t gx,
                                          uint32_t gy, const Ref& x, const Ref& bias,
                                          const Ref& y) {
    const uint64_t part_floats = split_part_floats(split, p.n_tok, p.n_out);
    if (part_floats == 0 || part_floats * 4 > split_buf_.size) {
        dispatch(shader, spec, &p, sizeof p, gx, gy, 1, {x}, {y});
        return;
    }
    const uint64_t n_y = uint64_t(p.n_tok) * p.n_out;
    const Ref parts{kSplitId, split_buf_.address, 0, part_floats * 4};
    MatPush pp = p;
    pp.y = parts.address;
    pp.has_bias = 0;
    pp.k_groups = u32(split.k_split);
    dispatch(shader, spec, &pp, sizeof pp, gx, gy, u32(split.splits), {x}, {parts});
    const SplitSumPush sp{parts.address,     p.bias,    y.address, u32(int64_t(n_y)), p.n_out,
                          u32(split.splits), p.has_bias};
    const uint64_t groups = (n_y + 255) / 256;
    dispatch("split_sum", {}, &sp, sizeof sp, split_x(groups), 1, split_z(groups), {parts, bias},
             {y});
}

void VulkanBackend::ensure_attention_partials(const Graph& g) {
    uint64_t need = kAttnTicketBytes;
    for (const Node& n : g.nodes()) {
        if (n.op != Op::Attention) continue;
        if (const uint32_t S = attention_splits(g, n))
            need = std::max(need, kAttnTicketBytes + uint64_t(g.tensor(n.out).rows()) *
                                                         uint64_t(n.i[0]) * S *
                                                         uint64_t(n.i[2] + 2) * sizeof(float));
    }
    // 1 MiB at least: an 8B model's decode needs 32 heads x 64 splits x 130 floats = 1.1 MB.
    if (grow_device_buffer(attn_part_, std::max<uint64_t>(need, 1 << 20),
                           "split-K attention partials"))
        ctx_->fill_zero(attn_part_);  // the merge tickets at its front start at zero
}

// Up to three MatMul nodes from nodes[at] on that read the same activations with weights of one
// type and row length on the decode matvec (q/k/v, gate/up): one dispatch over all their rows
// (the int8-dot one with biases too; the f32-activation one without). Returns the nodes
// recorded (0: none, the caller records nodes[at] alone).
size_t VulkanBackend::try_fuse_matvecs(const Graph& g, size_t at) {
    const std::vector<Node>& nodes = g.nodes();
    const Node& first = nodes[at];
    if (!fuse_ || first.op != Op::MatMul) return 0;
    const WeightDesc& w0 = weight_desc(g, first.src[0]);
    const int64_t T = g.tensor(first.src[1]).rows();
    const MatmulPlan plan = plan_matmul(w0, T);
    if (plan.tiled || plan.direct) return 0;
    const uint32_t type = shader_type(g, first.src[0]);
    auto group = [&](bool biases) {
        size_t n = 1;
        while (n < 3 && at + n < nodes.size()) {
            const Node& m = nodes[at + n];
            if (m.op != Op::MatMul || m.src[1] != first.src[1] ||
                (!biases && m.src[2] != kNoTensor) || shader_type(g, m.src[0]) != type ||
                weight_desc(g, m.src[0]).ne[0] != w0.ne[0])
                break;
            ++n;
        }
        return n;
    };
    size_t n = group(true);
    const Node* mats[3] = {&first, n > 1 ? &nodes[at + 1] : nullptr,
                           n > 2 ? &nodes[at + 2] : nullptr};
    // q/k/v with their ropes and KV stores after them. With n == 2, v has another weight type
    // (Q4_K_M's Q6_K attn_v layers): q + k rope and store k, v is a dispatch of its own that
    // stores its rows into the V cache itself (v_only), and the ropes and stores are marked
    // done. v reads the input after q + k, or, where the roped q takes the input's memory (the
    // planner may give it, v being the input's last reader), before them, on the same q8
    // activations.
    QkvRope rope;
    if (n >= 2 && qkv_rope_plan(g, at, &rope)) {
        const Ref x = ref(g, first.src[1]);
        const bool v_first = n == 2 && overlap(rope.q_rope, x);
        const Node* v[1] = {&nodes[at + 2]};  // a matmul of the same input (match_qkv_rope)
        QkvRope v_rope = rope;
        v_rope.v_only = true;
        auto record_v = [&] {
            if (!record_matvec_q8(g, v, 1, &v_rope)) return false;
            done_[at + 2] = done_[at + 6] = true;  // v and its store
            return true;
        };
        if ((!v_first || record_v()) && record_matvec_q8(g, mats, n, &rope)) {
            if (n == 3) return n + 4;
            done_[at + 3] = done_[at + 4] = done_[at + 5] = true;
            if (!v_first) record_v();  // failing, v and its store follow as nodes of their own
            return n;
        }
    }
    if (n > 1 && record_matvec_q8(g, mats, n)) return n;
    if (first.src[2] != kNoTensor || (n = group(false)) < 2) return 0;
    const Ref x = ref(g, first.src[1]);
    MatPartsPush p{};
    Ref outs[3];
    uint64_t rows = 0;
    for (size_t k = 0; k < n; ++k) {
        const Node& m = nodes[at + k];
        const Ref wr = ref(g, m.src[0]), y = ref(g, m.out);
        const auto n_out = u32(weight_desc(g, m.src[0]).ne[1]);
        rows += n_out;
        outs[k] = y;
        if (k == 0)
            p.first = MatPush{wr.address,
                              x.address,
                              y.address,
                              wr.address,
                              u32(w0.ne[0]),
                              n_out,
                              u32(T),
                              weight_row_bytes(w0),
                              0u};
        else if (k == 1)
            p.w1 = wr.address, p.y1 = y.address, p.n_out1 = n_out;
        else
            p.w2 = wr.address, p.y2 = y.address, p.n_out2 = n_out;
    }
    const uint64_t groups = (rows + plan.rows - 1) / plan.rows;
    const std::vector<uint32_t> spec{type,     plan.wg,           plan.rows,
                                     plan.tok, plan.subgroup_add, uint32_t(n)};
    const uint32_t gy = u32((T + plan.tok - 1) / plan.tok);
    if (n == 2)
        dispatch("matvec", spec, &p, sizeof p, split_x(groups), gy, split_z(groups), {x},
                 {outs[0], outs[1]});
    else
        dispatch("matvec", spec, &p, sizeof p, split_x(groups), gy, split_z(groups), {x},
                 {outs[0], outs[1], outs[2]});
    return n;
}

bool VulkanBackend::rms_vec4(int64_t group, const Ref& x, const Ref& w, const Ref& y,
                             const Ref& add_b, const Ref& add_s) {
    const uint64_t addresses = x.address | y.address | (w.buffer >= 0 ? w.address : 0) |
                               (add_b.buffer >= 0 ? add_b.address | add_s.address : 0);
    return group % 4 == 0 && (addresses & 15) == 0;
}

bool VulkanBackend::rms_on_registers(int64_t group, const Ref& x, const Ref& w, const Ref& y,
                                     const Ref& add_b, const Ref& add_s) const {
    return rms_vec4(group, x, w, y, add_b, add_s) && uint64_t(group) <= rms_workgroup(group) * 32;
}

uint32_t VulkanBackend::rms_workgroup(int64_t group) {
    // 256 invocations for model-width rows (4 vec4 loads each in flight at 4096), 64 for
    // per-head norms (head_dim 64..256).
    return group >= 1024 ? 256 : 64;
}

void VulkanBackend::record_rms_norm(const Ref& x, const Ref& w, const Ref& y, const Ref& add_b,
                                    const Ref& add_s, int64_t group, uint64_t n_groups, float eps,
                                    bool q8) {
    const bool add = add_b.buffer >= 0;
    const uint32_t wg = rms_workgroup(group);
    const uint32_t sg = subgroups_tile(wg) ? 1 : 0;
    const uint32_t vec4 = rms_vec4(group, x, w, y, add_b, add_s) ? 1 : 0;
    const Ref q = q8 ? q8_ref(group, int64_t(n_groups)) : Ref{};
    RmsPush p{x.address,
              w.buffer >= 0 ? w.address : x.address,
              y.address,
              add ? add_b.address : x.address,
              add ? add_s.address : y.address,
              u32(group),
              u32(n_groups),
              eps,
              w.buffer >= 0 ? 1u : 0u,
              q8 ? q.address : 0,
              q8 ? q8_scales_address(group, int64_t(n_groups)) : 0};
    dispatch("rms_norm", {wg, sg, vec4, add ? 1u : 0u, q8 ? 1u : 0u}, &p, sizeof p,
             split_x(n_groups), split_z(n_groups), 1, {x, w, add_b}, {y, add_s, q});
}

// Add (residual) then RmsNorm of its output over whole rows: one rms_norm dispatch with ADD,
// when the norm's output cannot overwrite what another workgroup has yet to read of the add's
// inputs (the planner may give it their memory once they are dead; the fused kernel still
// reads them). The norm also leaves q8 activations when a q8 matmul reads it next.
bool VulkanBackend::try_fuse_add_norm(const Graph& g, size_t at) {
    const std::vector<Node>& nodes = g.nodes();
    if (at + 1 >= nodes.size()) return false;
    const Node &add = nodes[at], &norm = nodes[at + 1];
    if (!fuse_ || add.op != Op::Add || norm.op != Op::RmsNorm || norm.src[0] != add.out)
        return false;
    const GraphTensor& out = g.tensor(norm.out);
    if (norm.i[0] > 0 && norm.i[0] != out.cols()) return false;
    const Ref a = ref(g, add.src[0]), b = ref(g, add.src[1]), s = ref(g, add.out);
    const Ref y = ref(g, norm.out), w = ref(g, norm.src[1]);
    const int64_t group = out.cols();
    const uint64_t n_groups = uint64_t(out.rows());
    // On the register path a workgroup has read its whole row (all its loads feed the sum
    // before the barrier) before it writes any of y, so y may reuse an input's memory row for
    // row (same offset), or anywhere when there is one row (decode).
    const bool regs = rms_on_registers(group, a, w, y, b, s);
    auto safe = [&](const Ref& in) {
        return !overlap(y, in) || (regs && (n_groups == 1 || y.offset == in.offset));
    };
    if (b.buffer < 0 || !safe(a) || !safe(b) || overlap(y, s)) return false;
    const bool q8 = regs && group % 32 == 0 && q8_for_next_matmul(g, at + 2, norm.out);
    record_rms_norm(a, w, y, b, s, group, n_groups, norm.f[0], q8);
    if (q8) q8_src_ = y.address, q8_src_cols_ = group, q8_src_rows_ = int64_t(n_groups);
    if (q8) q8_alt_ = false;
    return true;
}

void VulkanBackend::record_rope(const Graph& g, const Node& n, const Node* store) {
    const GraphTensor& out = g.tensor(n.out);
    const Ref a = ref(g, n.src[0]), y = ref(g, n.out);
    const Ref pos = ref(g, n.src[1]), ff = ref(g, n.src[2]);
    const Ref cache = store ? ref(g, store->src[1]) : Ref{};
    const int64_t n_head = out.cols() / n.i[0];
    const uint64_t heads = uint64_t(out.rows() * n_head);
    const auto table = rope_table_.find(&n);
    const bool has_table = table != rope_table_.end();
    RopePush p{a.address,
               pos.address,
               ff.buffer >= 0 ? ff.address : a.address,
               y.address,
               has_table ? io_.address + table->second : a.address,
               u32(out.rows()),
               u32(n_head),
               u32(n.i[0]),
               u32(n.i[1]),
               n.i[2] == int(RopeMode::Neox) ? 1u : 0u,
               ff.buffer >= 0 ? 1u : 0u,
               has_table ? 1u : 0u,
               n.f[0],
               n.f[1],
               store ? cache.address : 0,
               io_.address};
    const uint32_t mode = !store ? 0u : g.tensor(store->src[1]).type == DType::F16 ? 2u : 1u;
    dispatch("rope", {mode}, &p, sizeof p, 1, split_x(heads), split_z(heads), {a, pos, ff},
             {y, cache});
}

// A Rope whose output a KvStore (the next node) writes into the cache: the rope writes the
// cache rows itself (one dispatch and one barrier stage less per layer).
bool VulkanBackend::try_fuse_rope_store(const Graph& g, size_t at) {
    const std::vector<Node>& nodes = g.nodes();
    if (!fuse_ || at + 1 >= nodes.size()) return false;
    const Node &rope = nodes[at], &store = nodes[at + 1];
    if (rope.op != Op::Rope || store.op != Op::KvStore || store.src[0] != rope.out) return false;
    const GraphTensor& out = g.tensor(rope.out);
    const GraphTensor& cache = g.tensor(store.src[1]);
    if (cache.cols() != out.cols() || rope.i[0] % 2 != 0 ||
        (cache.type != DType::F16 && cache.type != DType::F32))
        return false;
    record_rope(g, rope, &store);
    return true;
}

bool VulkanBackend::try_fuse_qk_norm_rope(const Graph& g, size_t at) {
    if (!fuse_ || !q8_rope_ || g.nodes()[at].op != Op::RmsNorm) return false;
    const auto m = match_qk_norm_rope(g, at);
    if (!m) return false;
    const Node &nq = *m->norm_q, &nk = *m->norm_k, &rq = *m->rope_q;
    const GraphTensor &qt = g.tensor(nq.src[0]), &kt = g.tensor(nk.src[0]);
    const int64_t hd = m->head_dim, H = qt.cols() / hd, KV = kt.cols() / hd;
    const auto table = rope_table_.find(&rq);  // the host's (cos, sin), shared with k's rope
    if (table == rope_table_.end() || qt.rows() != 1 || hd % 4 != 0 || hd > 256) return false;
    const Ref q = ref(g, nq.src[0]), k = ref(g, nk.src[0]), v = ref(g, m->store_v->src[0]);
    const Ref qw = ref(g, nq.src[1]), kw = ref(g, nk.src[1]), y = ref(g, rq.out);
    const Ref kc = ref(g, m->store_k->src[1]), vc = ref(g, m->store_v->src[1]);
    // 16-byte loads and stores (the roped q may take q's or k's memory: all is read first).
    if (((q.address | k.address | v.address | y.address) & 15) != 0 ||
        (qw.buffer >= 0 && (qw.address & 15) != 0) || (kw.buffer >= 0 && (kw.address & 15) != 0))
        return false;
    const QkNormRopePush p{q.address,
                           k.address,
                           v.address,
                           qw.buffer >= 0 ? qw.address : q.address,
                           kw.buffer >= 0 ? kw.address : k.address,
                           io_.address + table->second,
                           y.address,
                           kc.address,
                           vc.address,
                           io_.address,
                           u32(H),
                           u32(KV),
                           u32(hd),
                           m->neox ? 1u : 0u,
                           nq.f[0],
                           qw.buffer >= 0 ? 1u : 0u,
                           kw.buffer >= 0 ? 1u : 0u};
    // rms_norm.comp's choice at its per-head workgroup of 64 (rms_workgroup).
    const uint32_t sg = subgroups_tile(kQkNormGroup) ? 1u : 0u;
    // As many 64-wide groups as the device runs in one workgroup (heads a group takes: H = 32
    // and KV = 8 are 10 rounds of four barriers at 256 invocations, 3 at 1024).
    const auto sh4 = u32((H + 2 * KV) * hd / 4);  // shared vec4s
    uint32_t wg = 0;
    for (uint32_t w : {1024u, 256u, 64u})
        if (wg == 0 && w <= pd_.max_workgroup_invocations &&
            uint64_t(sh4) * 16 + w * 4 <= pd_.max_shared_bytes)
            wg = w;
    if (wg == 0) return false;
    dispatch("qk_norm_rope", {sg, m->cache_f16 ? 1u : 0u, wg, sh4}, &p, sizeof p, 1, 1, 1,
             {q, k, v, qw, kw}, {y, kc, vc});
    return true;
}

bool VulkanBackend::record_attention(const Graph& g, const Node& n, bool q8) {
    const GraphTensor& out = g.tensor(n.out);
    const GraphTensor& kc = g.tensor(n.src[1]);
    if (n.i[2] > 256)
        throw Error("vulkan backend: attention head_dim " + std::to_string(n.i[2]) +
                    " is over the shader's 256");
    const Ref a = ref(g, n.src[0]), k = ref(g, n.src[1]), v = ref(g, n.src[2]), y = ref(g, n.out);
    const uint64_t heads = uint64_t(out.rows()) * uint64_t(n.i[0]);
    const uint32_t kv_f16 = kc.type == DType::F16 ? 1u : 0u;
    if (const uint32_t S = attention_splits(g, n)) {
        const int64_t group = n.i[0] / n.i[1];
        const uint32_t hb = split_heads(group, n.i[2]);
        const int64_t blocks = (group + hb - 1) / hb;
        const Ref part{kAttnPartId, attn_part_.address + kAttnTicketBytes, kAttnTicketBytes,
                       heads * S * uint64_t(n.i[2] + 2) * sizeof(float)};
        q8 = q8 && n.i[2] % 32 == 0;
        const Ref q = q8 ? q8_ref(out.cols(), out.rows()) : Ref{};
        const uint64_t qd = q8 ? q8_scales_address(out.cols(), out.rows()) : 0;
        const bool q_vec4 = a.address % 16 == 0 && n.i[2] % 4 == 0;  // q's rows on 16 bytes
        // The splits merged by the last of them (tickets at the front of attn_part_), or by
        // attention_combine.
        const bool merge = merge_attention_ && S <= kAttnMergeMaxSplits &&
                           uint64_t(out.rows()) * uint64_t(n.i[1] * blocks) <= kAttnTickets;
        SplitAttnPush sp{a.address,
                         k.address,
                         v.address,
                         part.address,
                         io_.address,
                         u32(out.rows()),
                         u32(n.i[0]),
                         u32(n.i[1]),
                         u32(n.i[2]),
                         u32(n.i[3]),
                         S,
                         n.f[0],
                         n.f[1],
                         attn_part_.address,
                         y.address,
                         q8 ? q.address : 0,
                         qd,
                         merge ? 1u : 0u,
                         q8 ? 1u : 0u,
                         q_vec4 ? 1u : 0u};
        if (merge) {
            const Ref tickets{kAttnPartId, attn_part_.address, 0, kAttnTicketBytes};
            dispatch("attention_split", {kv_f16, u32(n.i[2] / 8), hb}, &sp, sizeof sp, S,
                     u32(n.i[1] * blocks), u32(out.rows()), {a, k, v}, {part, tickets, y, q});
            return q8;
        }
        dispatch("attention_split", {kv_f16, u32(n.i[2] / 8), hb}, &sp, sizeof sp, S,
                 u32(n.i[1] * blocks), u32(out.rows()), {a, k, v}, {part});
        CombinePush cp{part.address, y.address, u32(out.rows()),    u32(n.i[0]),
                       u32(n.i[2]),  S,         q8 ? q.address : 0, qd};
        const uint32_t sg = pd_.subgroup_arithmetic ? 1u : 0u;
        dispatch("attention_combine", {q8 ? 1u : 0u, sg}, &cp, sizeof cp, split_x(heads),
                 split_z(heads), 1, {part}, {y, q});
        return q8;
    }
    AttnPush p{a.address,   k.address,   v.address,   y.address,   io_.address, u32(out.rows()),
               u32(n.i[0]), u32(n.i[1]), u32(n.i[2]), u32(n.i[3]), n.f[0],      n.f[1]};
    if (flash_attention_coopmat(g, n)) {
        dispatch("attention_flash_coopmat", {u32(n.i[2] / 16)}, &p, sizeof p,
                 u32(attention_row_tiles(g, n, kFlashCoopmatRows)), u32(n.i[1]), 1, {a, k, v}, {y});
        return false;
    }
    if (const uint32_t bc = flash_attention_tile(g, n)) {
        const uint32_t r = flash_rows_per_cluster(n.i[2]);
        dispatch("attention_flash", {kv_f16, u32(n.i[2] / 8), bc, r}, &p, sizeof p,
                 u32(attention_row_tiles(g, n, kFlashClusters * r)), u32(n.i[1]), 1, {a, k, v},
                 {y});
        return false;
    }
    dispatch("attention", {kv_f16}, &p, sizeof p, split_x(heads), split_z(heads), 1, {a, k, v},
             {y});
    return false;
}

void VulkanBackend::copy_floats(const Ref& src, const Ref& dst, uint64_t n) {
    EltPush p{src.address, src.address, dst.address, static_cast<uint32_t>(n), 0.0f};
    dispatch("eltwise", {kCopy}, &p, sizeof p, eltwise_groups(n), 1, 1, {src}, {dst});
}

void VulkanBackend::record_node(const Graph& g, const Node& n) {
    const GraphTensor& out = g.tensor(n.out);
    const Ref y = ref(g, n.out);
    const Ref a = ref(g, n.src[0]);
    const uint64_t n_out = static_cast<uint64_t>(out.n_elements());
    if (n_out >= (1ull << 32))
        throw Error("vulkan backend: node output '" + out.name + "' has 2^32 or more elements");
    switch (n.op) {
        case Op::Add:
        case Op::Mul:
        case Op::Scale:
        case Op::Softcap:
        case Op::GatedAct: {
            const Ref b = ref(g, n.src[1]);
            uint32_t op = n.op == Op::Add                   ? kAdd
                          : n.op == Op::Mul                 ? kMul
                          : n.op == Op::Scale               ? kScale
                          : n.op == Op::Softcap             ? kSoftcap
                          : n.i[0] == int(Activation::Silu) ? kSilu
                                                            : kGelu;
            EltPush p{a.address, b.buffer >= 0 ? b.address : a.address, y.address, u32(n_out),
                      n.f[0]};
            if (b.buffer >= 0)
                dispatch("eltwise", {op}, &p, sizeof p, eltwise_groups(n_out), 1, 1, {a, b}, {y});
            else
                dispatch("eltwise", {op}, &p, sizeof p, eltwise_groups(n_out), 1, 1, {a}, {y});
            break;
        }
        case Op::Copy:
        case Op::AllReduce:
        case Op::AllGather:
            if (n.op != Op::Copy && collective_ && collective_->n_ranks() > 1)
                host_collective(g, n);
            else if (y.address != a.address)
                copy_floats(a, y, n_out);
            break;
        case Op::TakeRows: {
            Ref src = a;
            const uint64_t skip = uint64_t(n.i[0]) * uint64_t(out.cols()) * sizeof(float);
            src.address += skip;
            src.offset += skip;
            src.size = n_out * sizeof(float);
            copy_floats(src, y, n_out);
            break;
        }
        case Op::RmsNorm: {
            const int64_t group = n.i[0] > 0 ? n.i[0] : out.cols();
            record_rms_norm(a, ref(g, n.src[1]), y, Ref{}, Ref{}, group,
                            n_out / static_cast<uint64_t>(group), n.f[0], false);
            break;
        }
        case Op::GetRows: {
            const WeightDesc& w = weight_desc(g, n.src[0]);
            const Ref ids = ref(g, n.src[1]);  // host ids were checked by check_step_inputs
            RowsPush p{a.address, ids.address, y.address, u32(w.ne[0]), weight_row_bytes(w)};
            dispatch("get_rows", {shader_type(g, n.src[0])}, &p, sizeof p, split_x(out.rows()),
                     split_z(out.rows()), 1, {ids}, {y});
            break;
        }
        case Op::MatMul: {
            const Node* self = &n;
            if (record_matvec_q8(g, &self, 1)) break;
            // The f32 kernels read the norm's output itself.
            if (pending_norm_.id != kNoTensor && pending_norm_.id == n.src[1]) materialise_norm();
            const WeightDesc& w = weight_desc(g, n.src[0]);
            const Ref x = ref(g, n.src[1]), bias = ref(g, n.src[2]);
            const int64_t T = g.tensor(n.src[1]).rows();
            MatPush p{a.address,
                      x.address,
                      y.address,
                      bias.buffer >= 0 ? bias.address : a.address,
                      u32(w.ne[0]),
                      u32(w.ne[1]),
                      u32(T),
                      weight_row_bytes(w),
                      bias.buffer >= 0 ? 1u : 0u};
            MatmulPlan plan = plan_matmul(w, T);
            // matmul_coopmat reads x 16 bytes at a time; the planner's offsets are 64-aligned.
            if (plan.coopmat &&
                (x.address % 16 != 0 || !coopmat_pipeline_ok(shader_type(g, n.src[0]))))
                plan.coopmat = false;
            if (plan.coopmat) {
                const Ref x16 = f16_input(x, T, w.ne[0]);
                const bool half = x16.buffer == kX16Id;
                if (half) p.x = x16.address;
                const uint32_t type = shader_type(g, n.src[0]);
                const uint32_t toks = coopmat_tile_toks(type, half, T);
                record_prefill_matmul("matmul_coopmat", coopmat_spec(type, false, half, toks), p,
                                      coopmat_split(w.ne[0], w.ne[1], T),
                                      u32((w.ne[1] + 127) / 128), u32((T + toks - 1) / toks),
                                      half ? x16 : x, bias, y);
                if (overlap(y, x)) x16_src_ = 0;  // x's memory holds y now
            } else if (plan.tiled) {
                record_prefill_matmul("matmul_tiled", {shader_type(g, n.src[0])}, p,
                                      tiled_split(w.ne[0], w.ne[1], T), u32((w.ne[1] + 63) / 64),
                                      u32((T + 63) / 64), x, bias, y);
            } else {
                const uint64_t groups = (uint64_t(w.ne[1]) + plan.rows - 1) / plan.rows;
                // matvec_direct reads x as 16-byte words (rows of whole groups are 128 bytes).
                const bool direct = plan.direct && x.address % 16 == 0;
                dispatch(direct ? "matvec_direct" : "matvec",
                         direct
                             ? std::vector<uint32_t>{shader_type(g, n.src[0]), plan.wg, plan.rows,
                                                     plan.tok, plan.subgroup_add}
                             : std::vector<uint32_t>{shader_type(g, n.src[0]), plan.wg, plan.rows,
                                                     plan.tok, plan.subgroup_add, 1u, plan.gpt},
                         &p, sizeof p, split_x(groups), u32((T + plan.tok - 1) / plan.tok),
                         split_z(groups), {x}, {y});
            }
            break;
        }
        case Op::Rope:
            record_rope(g, n, nullptr);
            break;
        case Op::KvStore: {
            const GraphTensor& cache = g.tensor(n.src[1]);
            const GraphTensor& src = g.tensor(n.src[0]);
            // The rows written depend on n_past, which the recorded commands do not know:
            // the hazard range is the whole cache (its readers read it whole anyway).
            const Ref c = ref(g, n.src[1]);
            const uint64_t n_el = uint64_t(src.n_elements());
            KvPush p{a.address, c.address, io_.address, u32(n_el), u32(cache.cols())};
            dispatch("kv_store", {cache.type == DType::F16 ? 1u : 0u}, &p, sizeof p,
                     eltwise_groups(n_el), 1, 1, {a}, {c});
            break;
        }
        case Op::Attention:
            record_attention(g, n, false);
            break;
        case Op::MoeRoute: {
            const int64_t n_expert = g.tensor(n.src[0]).cols();
            if (n.i[0] < 1 || n.i[0] > 16 || n.i[0] > n_expert)
                throw Error("vulkan backend: moe_route k=" + std::to_string(n.i[0]) +
                            " must be 1..16 and at most n_expert");
            RoutePush p{a.address,     y.address,   u32(out.rows()),
                        u32(n_expert), u32(n.i[0]), n.i[1] != 0 ? 1u : 0u};
            if (n_expert <= 512) {  // a workgroup per token (moe_route.comp)
                const uint32_t sg = subgroups_tile(64) ? 1u : 0u;
                dispatch("moe_route", {sg}, &p, sizeof p, split_x(uint64_t(out.rows())), 1,
                         split_z(uint64_t(out.rows())), {a}, {y});
            } else {
                dispatch("moe_route_serial", {}, &p, sizeof p, u32((out.rows() + 63) / 64), 1, 1,
                         {a}, {y});
            }
            break;
        }
        case Op::MoeFfn: {
            if (record_moe_ffn_q8(g, n)) break;
            const WeightDesc& gw = weight_desc(g, n.src[2]);
            const WeightDesc& uw = weight_desc(g, n.src[3]);
            const WeightDesc& dw = weight_desc(g, n.src[4]);
            const Ref route = ref(g, n.src[1]);
            const Ref gate = ref(g, n.src[2]), up = ref(g, n.src[3]), down = ref(g, n.src[4]);
            const int64_t T = out.rows(), k = g.tensor(n.src[1]).cols() / 2;
            const int64_t n_embd = gw.ne[0], n_ff = gw.ne[1];
            const Ref h{kMoeId, moe_h_.address, 0, uint64_t(T * k * n_ff) * sizeof(float)};
            GateUpPush gp{gate.address,
                          up.address,
                          a.address,
                          route.address,
                          h.address,
                          u32(n_embd),
                          u32(n_ff),
                          u32(k),
                          u32(n.i[0]),
                          u32(gw.ne[2]),
                          weight_row_bytes(gw),
                          weight_row_bytes(uw),
                          u32(n.i[1])};
            dispatch("moe_gate_up", {shader_type(g, n.src[2]), shader_type(g, n.src[3])}, &gp,
                     sizeof gp, split_x(n_ff), u32(T * k), split_z(n_ff), {a, route}, {h});
            DownPush dp{down.address,  h.address,           route.address, y.address,
                        u32(n_ff),     u32(n_embd),         u32(k),        u32(n.i[0]),
                        u32(dw.ne[2]), weight_row_bytes(dw)};
            dispatch("moe_down", {shader_type(g, n.src[4])}, &dp, sizeof dp, split_x(n_embd),
                     u32(T), split_z(n_embd), {h, route}, {y});
            break;
        }
    }
}

}  // namespace tandem::vk
