#pragma once
// The Vulkan backend: weights, KV cache and scratch in device memory; a step graph is recorded
// into one command buffer (barriers only where a node reads or overwrites what an earlier,
// unbarriered node wrote) and submitted once; the host waits only for the step's outputs.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/backend/backend.h"
#include "tandem/backend/fusion.h"
#include "tandem/backend/input_split.h"
#include "vk_context.h"
#include "vk_pipelines.h"
#include "vk_profiler.h"

namespace tandem::vk {

// Buffer ids for hazard tracking; weights are never written, so they never need a barrier.
inline constexpr int kScratchId = 0, kIoId = 1, kMoeId = 2, kCollectiveId = 3, kAttnPartId = 4,
                     kQ8Id = 5, kSplitId = 6, kX16Id = 7, kKvId0 = 16, kWeightId0 = 1 << 20;
// Split-K attention's merge tickets (token x head block) at the front of attn_part_, zeroed when
// it is made and left zero by every dispatch; the partials follow.
inline constexpr uint64_t kAttnTickets = 8192, kAttnTicketBytes = kAttnTickets * 4;
// Splits the last split workgroup merges at most (attention_split.comp's MAX_SPLIT); more go
// through attention_combine.
inline constexpr uint32_t kAttnMergeMaxSplits = 32;
// Clusters of 8 lanes per attention_flash.comp workgroup; each takes flash_rows_per_cluster()
// query rows (token, head of a GQA group): two, so each K / V load from shared memory serves two
// rows, except at head_dim 256, where two rows' q and sums would not fit in registers.
inline constexpr uint32_t kFlashClusters = 32;
inline uint32_t flash_rows_per_cluster(int64_t head_dim) {
    return head_dim <= 128 ? 2 : 1;
}
// The same for attention_flash_coopmat.comp.
inline constexpr uint32_t kFlashCoopmatRows = 64;
// The step parameters the shaders read (instead of push constants, so recorded commands stay
// valid for every step): at byte 0 of the io buffer, written by the host before each submit.
struct StepParams {
    uint32_t n_past;  // position of the step's first token
};
// Push constants of the matmul kernels (matvec*.comp, matmul_tiled.comp, matmul_coopmat.comp).
struct MatPush {
    uint64_t w, x, y, bias;
    uint32_t n_in, n_out, n_tok, row_bytes, has_bias;
    uint32_t k_groups = 0;  // matmul_tiled / matmul_coopmat: 32-input groups a split sums (0: all)
};
// Push constants of attention.comp, attention_flash.comp and attention_flash_coopmat.comp.
struct AttnPush {
    uint64_t q, k, v, y, step;
    uint32_t n_tok, n_head, n_kv_head, head_dim, window;
    float scale, softcap;
};
inline constexpr uint64_t kStepParamsBytes = 256;  // io slots start after them
inline constexpr uint64_t kIoAlign = 256;          // io slots and rope tables start on it

// Bytes of one row of a weight in its file type (the shaders' row strides).
inline uint32_t weight_row_bytes(const WeightDesc& w) {
    return static_cast<uint32_t>(row_bytes(w.type, static_cast<uint64_t>(w.ne[0])));
}

class VulkanBackend final : public Backend {
  public:
    explicit VulkanBackend(const PhysicalDevice& pd);
    ~VulkanBackend() override;

    const DeviceInfo& device() const override { return info_; }
    // Every op of the step graph is implemented (collectives through the host).
    bool can_compute() const override { return true; }
    void upload_weight(int slot, const WeightDesc& weight, bool keep_host) override;
    void allocate_kv(const std::vector<KvDesc>& kv) override;
    void reserve_scratch(uint64_t bytes) override;
    void compute(const Graph& graph, const StepIO& io) override;
    void set_collective(Collective* c) override { collective_ = c; }
    // As allocated (the driver's sizes, counted by the context at vkAllocateMemory).
    uint64_t weight_bytes() const override { return weight_bytes_; }
    uint64_t kv_bytes() const override { return kv_bytes_; }
    uint64_t scratch_bytes() const override { return scratch_.allocated; }
    // vkCmdCopyBuffer of a large device buffer, (read + written bytes) / GPU time; measured once.
    double copy_bandwidth() override;
    // Step inputs/outputs, MoE expert activations, collective and upload staging buffers.
    uint64_t other_bytes() const override {
        return ctx_->live_bytes() - weight_bytes_ - kv_bytes_ - scratch_.allocated;
    }

  private:
    // Once all weights are in (allocate_kv): with the probe on, imported weights copied to device
    // memory where they read clearly slower in place (vk_placement_probe.cpp).
    void settle_weight_placement();
    // A device buffer for a copy of weight w, padded for the kernels' whole-word reads.
    Buffer create_weight_buffer(const WeightDesc& w);
    // Records with `record` into cb_, submits, waits: seconds on the GPU's timestamps (the host
    // clock around the submission where the device has none). vk_copy_bandwidth.cpp.
    double time_submission(const std::function<void(VkCommandBuffer)>& record);
    // Bytes/s the read_vec4 shader reads over `bytes` of src (best of 5 timed passes).
    double read_bandwidth(const Buffer& src, uint64_t bytes, const Buffer& sink);
    // Where a tensor lives: which buffer (for hazard tracking) and its device address.
    struct Ref {
        int buffer = -1;
        uint64_t address = 0;
        uint64_t offset = 0;  // within `buffer`
        uint64_t size = 0;
    };
    struct Range {
        int buffer;
        uint64_t lo, hi;
    };
    // How a MatMul node runs: the tiled kernel (prefill) or matvec with its specialisation.
    struct MatmulPlan {
        bool tiled = false;
        bool coopmat = false;  // matmul_coopmat.comp (prefill on cooperative matrices)
        bool direct = false;   // matvec_direct.comp (x read from memory, no staging)
        uint32_t wg = 256, rows = 8, tok = 1, subgroup_add = 0;
        uint32_t gpt = 2;  // matvec.comp: 32-element groups per invocation per staged chunk
    };
    struct Weight {
        WeightDesc desc;
        Buffer buf;
        std::vector<float> host_f32;  // small f32 weights (rope frequency factors) for the host
        bool repacked = false;        // vk_repack.h layout (Q4_0 / Q8_0 on discrete GPUs)
        const void* host = nullptr;   // the caller's bytes, where imported in place
    };
    // The command buffers one graph was recorded into, replayed by later steps with the same
    // graph (every decode token): per-step values come from StepParams and the io buffer, so
    // only buffer moves (generation_) invalidate them.
    struct CachedStep {
        uint64_t key = 0;         // Graph::fingerprint() (buffers: generation)
        uint64_t generation = 0;  // generation_ when recorded
        uint64_t last_used = 0;
        std::vector<VkCommandBuffer> cbs;
        std::vector<std::string> profile_labels;  // TANDEM_VK_PROFILE: the timestamps' labels
    };

    Ref ref(const Graph& g, TensorId id) const;
    const WeightDesc& weight_desc(const Graph& g, TensorId id) const;
    // The TYPE specialisation constant for a weight: its DType, or the repacked layout's id.
    uint32_t shader_type(const Graph& g, TensorId id) const;
    void layout_io(const Graph& g, const StepIO& io);
    // Places the rope tables from byte `at` of io_ (rope_table_, rope_fills_); returns the end.
    uint64_t place_rope_tables(const Graph& g, uint64_t at);
    void fill_rope_tables(const StepIO& io);  // this step's cos / sin into the placed tables
    void record_node(const Graph& g, const Node& n);
    // Records nodes[at] (an Add) and the RmsNorm after it as one dispatch when that is safe;
    // false: neither is recorded.
    bool try_fuse_add_norm(const Graph& g, size_t at);
    // rms_norm.comp's workgroup for a group length, and whether it takes its register path
    // (16-byte aligned rows of at most 32 floats per invocation).
    static uint32_t rms_workgroup(int64_t group);
    // rms_norm.comp's VEC4 path: 16-byte loads (rows a multiple of 4, aligned addresses).
    static bool rms_vec4(int64_t group, const Ref& x, const Ref& w, const Ref& y, const Ref& add_b,
                         const Ref& add_s);
    bool rms_on_registers(int64_t group, const Ref& x, const Ref& w, const Ref& y, const Ref& add_b,
                          const Ref& add_s) const;
    size_t try_fuse_matvecs(const Graph& g, size_t at);
    // The int8-dot decode matvec (matvec_q8.comp) runs weight `w` for T tokens.
    bool q8_matvec_ok(const Graph& g, TensorId w, int64_t T) const;
    // Whether the int8-dot items (q8_items.glsl) read rows of n_in weights of shader type t
    // (file type `type`): matvec_q8.comp's and moe_q8.comp's weights.
    static bool q8_items_read(uint32_t t, DType type, int64_t n_in);
    // Bytes of the int8 values of `values` activations: whole groups of the halves layout.
    static uint64_t q8_values_bytes(uint64_t values);
    // The q8 activations of `values` values: the int8 values, then (d, s) per 32.
    static uint64_t q8_act_bytes(uint64_t values) {
        return q8_values_bytes(values) + values / 32 * 8;
    }
    // quantize_q8.comp: the n values of a (op 0), or act(a) * b (op gated_q8_op(), also written
    // to y), as q8 activations at q with their (d, s) at address ds.
    void record_quantize_q8(const Ref& a, const Ref& b, const Ref& y, const Ref& q, uint64_t ds,
                            uint64_t n, uint32_t op);
    // quantize_q8.comp's OP for a GatedAct's activation (eltwise.comp's ids).
    static uint32_t gated_q8_op(int32_t activation) {
        return activation == int32_t(Activation::Silu) ? 4u : 5u;
    }
    // Whether subgroups tile n invocations (and can add across themselves): the shaders'
    // SUBGROUP_ADD choice.
    bool subgroups_tile(uint32_t n) const {
        return pd_.subgroup_arithmetic && pd_.subgroup_size > 0 && n % pd_.subgroup_size == 0;
    }
    // Nodes[at] is a MatMul on the q8 path reading `x` (the output of the node before it).
    bool q8_for_next_matmul(const Graph& g, size_t at, TensorId x) const;
    // Where the q8 activations of a [T, n_in] input live: q8_buf_ from byte 0 (alt: from
    // q8_half_, where matvec_q8's RESID writes them), int8 values [T * n_in] (rounded up to 256),
    // then (d, s) [T * n_in / 32], then room for the sums of squares of a folded norm (as many
    // pairs again).
    Ref q8_ref(int64_t n_in, int64_t T, bool alt = false) const;
    uint64_t q8_scales_address(int64_t n_in, int64_t T, bool alt = false) const;
    // Whether two Refs share bytes of one buffer.
    static bool overlap(const Ref& p, const Ref& q) {
        return p.buffer == q.buffer && p.offset < q.offset + q.size && q.offset < p.offset + p.size;
    }
    // Quantises x into q8_buf_ unless it already holds it (q8_src_).
    void quantize_q8(const Ref& x, int64_t n_in, int64_t T);
    // Grows q8_buf_ for the graph's q8 matmuls (before recording, like ensure_attention_partials).
    void ensure_q8_buffer(const Graph& g);
    // The MatMul nodes (1-3 reading one input, each with its bias or none) as one matvec_q8
    // dispatch; false (nothing recorded) when they cannot take the q8 path. rope: q/k(/v) with
    // their rotary embedding and KV stores (matvec_q8.comp ROPE).
    struct QkvRope {
        Ref q_rope, k_cache, v_cache;
        // head_dim (<= 256) | NeoX << 9 | f16 cache << 10 | the cos/sin table's offset in io_,
        // in 256-byte units, << 11
        uint32_t params;
        uint32_t rows;        // rows per workgroup: whole rotation pairs
        bool v_only = false;  // one matmul, v: its rows stored into the V cache, unroped
    };
    bool record_matvec_q8(const Graph& g, const Node* const* mats, size_t n,
                          const QkvRope* rope = nullptr);
    // Nodes at.. are q/k/v with their ropes and KV stores (match_qkv_rope) that matvec_q8 can
    // rope and store itself: the plan for it; false: not applicable (or TANDEM_VK_QKV_ROPE=0).
    bool qkv_rope_plan(const Graph& g, size_t at, QkvRope* plan) const;
    bool q8_shares(uint32_t type, uint32_t rows, int64_t T, int64_t n_in) const;
    uint32_t q8_rows_for(uint32_t type, int64_t n_in, uint32_t at_least) const;
    uint32_t q8_share_wg(int64_t n_in) const;
    bool few_items_per_row(uint32_t type, int64_t n_in) const;
    // matvec_q8.comp's K64 for a shader type: 1 where Q4_K / Q5_K items are 64 weights.
    uint32_t k64_items(uint32_t type) const;
    // An RmsNorm, GatedAct or Attention whose output feeds a q8 matmul (the next node) leaves
    // the q8 activations too; false: not applicable, nothing recorded.
    bool try_q8_producer(const Graph& g, size_t at);
    // A MoeFfn node on the q8 expert path (vk_moe.cpp: q8 item types, rows of whole 256-value
    // groups; TANDEM_VK_MOE_Q8=0 turns it off); false, nothing recorded, where it does not apply.
    bool record_moe_ffn_q8(const Graph& g, const Node& n);
    // Where record_moe_ffn_q8 puts its pieces in the MoE buffer, or nothing where the q8 path
    // does not take the node.
    struct MoeQ8Layout {
        uint64_t hu, xq, hq, ys, lists, end;
        bool prefill;
    };
    std::optional<MoeQ8Layout> moe_q8_layout(const Graph& g, const Node& n) const;
    // Nodes at..: a q8 matvec, (its one-rank AllReduce,) the residual Add of its output and the
    // RmsNorm of that sum over whole rows (match_matvec_resid_norm), read next by a q8 matvec:
    // one matvec_q8 dispatch
    // (RESID) writes the sum and the q8 activations of sum * w, and the matvecs reading the norm
    // scale their sums (NORM_EPS; pending_norm_). Returns the nodes recorded, 0: none.
    size_t try_fuse_resid_norm(const Graph& g, size_t at);
    // The pending norm's output written after all (something other than a q8 matvec reads it).
    void materialise_norm();
    // rms_norm.comp over whole groups; add_b/add_s: the fused residual add (buffer -1: none);
    // q8: also quantise the output (register path, the caller checked).
    void record_rms_norm(const Ref& x, const Ref& w, const Ref& y, const Ref& add_b,
                         const Ref& add_s, int64_t group, uint64_t n_groups, float eps, bool q8);
    bool cacheable(const Graph& g) const;
    CachedStep* find_cached(uint64_t key);
    CachedStep* new_cached(uint64_t key);
    void drop_cached(CachedStep* c);
    void copy_outputs(const Graph& g, const StepIO& io);
    MatmulPlan plan_matmul(const WeightDesc& w, int64_t n_tok) const;
    // Whether matmul_coopmat may run for this weight type: on first use the kernel is checked
    // against the f32 tiles (coopmat_check), then its pipeline must build; a failure (a driver
    // refusing or miscomputing the rewritten SPIR-V) turns the path off, logged.
    bool coopmat_pipeline_ok(uint32_t spec_type);
    // matmul_coopmat's specialisation for weight type `spec_type` (moe: its MOE form).
    // x16: its activations are f16 rows (to_f16.comp); toks: tokens a tile (64 or 128).
    std::vector<uint32_t> coopmat_spec(uint32_t spec_type, bool moe, bool x16 = false,
                                       uint32_t toks = 64) const {
        // constant_id 0-7 of matmul_coopmat.comp
        const uint32_t stage = coopmat_stage(spec_type, toks);
        return {spec_type,           16u,           16u,  moe ? 1u : 0u,
                coopmat_f16_decode_, x16 ? 1u : 0u, toks, stage};
    }
    // matmul_coopmat.comp's STAGE for a weight type and tile width (TANDEM_VK_COOPMAT_STAGE
    // for every one where set).
    uint32_t coopmat_stage(uint32_t spec_type, uint32_t toks) const;
    // Repacked Q4_0 / Q8_0 decoded straight to f16 in the tile (dq_group_q4_0r_f16,
    // dq_group_q8_0r_f16).
    bool coopmat_q4_0_f16(uint32_t spec_type) const;
    bool coopmat_q8_0_f16(uint32_t spec_type) const;
    // Tokens a tile of a dense cooperative-matrix matmul over n_tok tokens of weight type
    // `spec_type` (x16 as coopmat_spec's): 128 past 64 tokens for repacked Q4_0 and Q8_0 and
    // the K-quants where the wide pipeline builds, else 64.
    uint32_t coopmat_tile_toks(uint32_t spec_type, bool x16, int64_t n_tok);
    // A dense prefill matmul's input x [rows, n_in] as f16 in x16_buf_ (to_f16.comp), made
    // unless it already holds it (x16_src_); {} where the buffer is too small.
    Ref f16_input(const Ref& x, int64_t rows, int64_t n_in);
    // Sizes x16_buf_ for the graph's cooperative-matrix matmuls (before recording).
    void ensure_x16_buffer(const Graph& g);
    // Makes b a new device buffer of `bytes` where it is smaller (after the device is idle; the
    // generation moves, so no recorded step keeps the old address). False: b was big enough.
    bool grow_device_buffer(Buffer& b, uint64_t bytes, const char* what);
    // "" when `shader`'s pipeline with `spec` builds, after `check` ran once (its first call,
    // tracked by `checked`) and found nothing; else why not. The cooperative-matrix kernels'
    // gate (the matmul and the prefill attention).
    std::string first_use_why_not(bool& checked, const std::function<std::string()>& check,
                                  const char* shader, const std::vector<uint32_t>& spec);
    std::string coopmat_check();  // "" or why not (vk_coopmat_check.cpp)
    // The same for attention_flash_coopmat.comp at head_dim hd, against attention.comp.
    std::string flash_coopmat_check(uint32_t hd);
    // Runs record(cb, 0) and record(cb, 1) in a command buffer of their own, each writing n
    // floats to out at n * 4 * k bytes, and returns the NMSE of the first against the second.
    double nmse_of_two(const std::function<void(VkCommandBuffer, int)>& record, const Buffer& out,
                       size_t n);
    // Splits of the cached positions for split-K decode attention (attention_split.comp), or 0
    // for the one-pass kernel (prefill, odd head_dim, TANDEM_VK_SPLITK=0).
    uint32_t attention_splits(const Graph& g, const Node& n) const;
    // Subgroup shuffles over clusters of 8 consecutive lanes (the q8 quantiser, split-K and
    // tiled attention): a subgroup size that 8 divides.
    static bool clusters_of_8(const PhysicalDevice& pd) {
        return pd.subgroup_shuffle && pd.subgroup_size >= 8 && pd.subgroup_size % 8 == 0;
    }
    // Workgroups of `rows` query rows (token, head of a GQA group) per KV head that an
    // Attention node's prefill takes.
    static uint64_t attention_row_tiles(const Graph& g, const Node& n, uint32_t rows) {
        const uint64_t all = uint64_t(g.tensor(n.out).rows()) * uint64_t(n.i[0] / n.i[1]);
        return (all + rows - 1) / rows;
    }
    uint32_t flash_attention_tile(const Graph& g, const Node& n) const;
    bool flash_coopmat_fits(const Graph& g, const Node& n) const;
    bool flash_attention_coopmat(const Graph& g, const Node& n);
    // Grows attn_part_ for the graph's split-K attention partials (before recording: a buffer
    // that moves invalidates recorded commands).
    void ensure_attention_partials(const Graph& g);
    void read_tuning_env();
    // Refs of buffer -1 (absent optional tensors) in reads/writes are ignored.
    void dispatch(const std::string& shader, const std::vector<uint32_t>& spec, const void* push,
                  uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz,
                  std::initializer_list<Ref> reads, std::initializer_list<Ref> writes);
    std::string node_label(const Graph& g, const Node& n) const;
    void begin_recording();
    void start_command_buffer();
    void submit_partial();
    void finish_and_wait();
    void host_collective(const Graph& g, const Node& n);
    void copy_floats(const Ref& src, const Ref& dst, uint64_t n);
    // rope.comp for a Rope node; store: the KvStore of its output, done by the same dispatch.
    void record_rope(const Graph& g, const Node& n, const Node* store);
    bool try_fuse_rope_store(const Graph& g, size_t at);
    // Nodes at..at + 5: the q/k norms, ropes and KV stores after q/k/v (match_qk_norm_rope) as
    // one qk_norm_rope.comp dispatch (off with TANDEM_VK_QKV_ROPE=0 or TANDEM_VK_FUSE=0).
    bool try_fuse_qk_norm_rope(const Graph& g, size_t at);
    // Split-K (attention_split + attention_combine) or one-pass attention; q8: the combine pass
    // also leaves q8 activations when it can (returned).
    bool record_attention(const Graph& g, const Node& n, bool q8);
    // Sizes the MoE buffer for the graph's expert FFNs before recording (so no buffer moves
    // while a step is recorded).
    void ensure_moe_buffer(const Graph& g);
    // How a prefill matmul splits its inputs where its grid is small, so that ~256 workgroups
    // run: the tiled kernel's for a router's 128 rows (16 workgroups at 512 tokens), the
    // cooperative-matrix one's for short prompts (an 8B's 4096 rows at 16 tokens: 32 workgroups
    // of 128 rows, each walking all 4096 or 14336 inputs). ensure_split_buffer sizes split_buf_
    // for the graph's splits (before recording); record_prefill_matmul runs one. k_split counts
    // 32-input groups (input_split.h).
    static InputSplit tiled_split(int64_t n_in, int64_t n_out, int64_t n_tok);
    // Counted in 64-token tiles whatever the tile (64 or 128 tokens), so both forms split alike
    // and give the same bits.
    InputSplit coopmat_split(int64_t n_in, int64_t n_out, int64_t n_tok) const;
    void ensure_split_buffer(const Graph& g);
    // A prefill matmul's dispatch (grid gx x gy) of `shader`: split as `split` says where
    // split_buf_ has room for the parts, else whole.
    void record_prefill_matmul(const char* shader, const std::vector<uint32_t>& spec,
                               const MatPush& p, const InputSplit& split, uint32_t gx, uint32_t gy,
                               const Ref& x, const Ref& bias, const Ref& y);

    DeviceInfo info_;
    PhysicalDevice pd_;
    // Discrete GPUs 512 x 16, else 256 x 8 (read_tuning_env); TANDEM_VK_MATVEC="wg,rows" overrides
    uint32_t matvec_wg_ = 256, matvec_rows_ = 8;
    // Groups per invocation per staged chunk for one token (TANDEM_VK_GPT): an H200 sweep (8B,
    // tg64, tok/s for 1 / 2 / 4 / 8) gave Q4_0 208 / 211 / 214 / 211, Q8_0 200 / 202 / 206 / 205,
    // Q4_K 194 / 196 / 199 / 200.
    uint32_t matvec_gpt1_ = 4;
    bool matvec_direct_ = false;  // only with TANDEM_VK_MATVEC="wg,rows,1" (tuning runs)
    bool matvec_env_ = false;     // TANDEM_VK_MATVEC set: every matrix takes its shape
    bool tiled_ok_ = true;        // TANDEM_VK_TILED=0 turns it off
    // Prefill on cooperative matrices where the device has them (pd_.coopmat_f16);
    // TANDEM_VK_COOPMAT=0 turns it off (the f32 tiled kernel then).
    bool coopmat_ok_ = true;
    bool coopmat_checked_ = false;
    // The int8-dot decode matvec: on where the device has integer dot products and subgroup
    // shuffles (the quantiser's 8-lane reductions); TANDEM_VK_Q8=0 turns it off. q8_rows_: rows
    // per 128-invocation workgroup (TANDEM_VK_Q8_ROWS, tuning). q8_share_: the workgroup's
    // invocations share each item's activations over its rows (matvec_q8.comp SHARE, where
    // q8_shares; TANDEM_VK_Q8_SHARE=0: each row's invocations load their own). H200, 8B tg128
    // tok/s (session 9, halves layout): sharing at 2 / 4 rows Q4_0 393 / 367, Q4_K 328 / 306;
    // not sharing (2 rows) 372 / 314; before the halves layout, sharing at 8 rows 342 / 268.
    bool q8_ = false;
    bool moe_q8_ = true;  // TANDEM_VK_MOE_Q8=0: expert FFNs on the element-wise shaders
    // The q8 path's prefill experts on cooperative matrices where f16 prefill matmuls run
    // (TANDEM_VK_MOE_COOPMAT=0: moe_q8.comp; TANDEM_VK_COOPMAT=0 turns both off).
    bool moe_coopmat_ = true;
    // matmul_coopmat's F16_DECODE bits: repacked Q4_0 (1) and Q8_0 (2) decoded straight to f16
    // (TANDEM_VK_COOPMAT_F16DQ=N sets them: 0 decodes every type through f32, the same bits).
    uint32_t coopmat_f16_decode_ = 3;
    // Dense prefill matmuls on cooperative matrices read their input as f16 made once
    // (TANDEM_VK_COOPMAT_X16=0: each tile converts the f32 rows itself, the same bits).
    bool coopmat_x16_ = true;
    // Dense cooperative-matrix matmuls of more than 64 tokens in tiles of 128 tokens
    // (TANDEM_VK_COOPMAT_TOKS=64 keeps 64; so does a device whose shared memory is too small or
    // whose driver refuses the wide pipeline).
    bool coopmat_wide_ = true;
    // TANDEM_VK_COOPMAT_TOKS=128: every weight type in the wide tiles, not only those
    // coopmat_tile_toks picks.
    bool coopmat_wide_all_ = false;
    int coopmat_stage_ = -1;    // TANDEM_VK_COOPMAT_STAGE (-1: coopmat_stage's choice)
    bool matmul_split_ = true;  // TANDEM_VK_MATMUL_SPLIT=0: the prefill matmuls never split
    int64_t split_workgroups_ = kSplitAim;  // coopmat_split's (TANDEM_VK_SPLIT_WORKGROUPS, tuning)
    uint32_t q8_rows_ = 2;
    bool q8_rows_set_ = false;  // TANDEM_VK_Q8_ROWS given: every type takes q8_rows_
    bool q8_share_ = true;
    // Rows of fewer items than a workgroup's invocations take the per-row split at 8 rows
    // (few_items_per_row; TANDEM_VK_Q8_FEW=0: repacked Q6_K's only).
    bool q8_few_ = true;
    // Q4_K / Q5_K decode items of 64 weights (matvec_q8.comp K64; TANDEM_VK_K64=0: 32).
    bool q8_k64_ = true;
    uint32_t q8_share_wg_ = 0;  // TANDEM_VK_Q8_WG: the shared split's workgroup (0: q8_share_wg)
    // q/k/v's matvec ropes and stores into the KV cache itself (TANDEM_VK_QKV_ROPE=0: off).
    bool q8_rope_ = true;
    std::unique_ptr<Context> ctx_;
    std::unique_ptr<Pipelines> pipelines_;
    // The step's commands go into cbs_ (allocated once, reused by every step): cb_ is the one
    // being recorded. Long steps are queued in pieces while the rest is recorded, so the GPU
    // starts before recording ends (no host wait between the pieces; TANDEM_VK_SPLIT=0: one).
    VkCommandBuffer cb_ = VK_NULL_HANDLE;
    std::vector<VkCommandBuffer> cbs_;
    size_t cb_next_ = 0;  // next of *pool_ to record this step
    // Where start_command_buffer takes command buffers from: cbs_ (re-recorded every step) or
    // the CachedStep being recorded (kept for replay).
    std::vector<VkCommandBuffer>* pool_ = &cbs_;
    std::vector<std::unique_ptr<CachedStep>> cached_;
    uint64_t generation_ = 0;  // bumped whenever a buffer recorded commands use may have moved
    uint64_t use_clock_ = 0;
    bool cache_steps_ = true;  // TANDEM_VK_CACHE=0 re-records every step
    bool fuse_ = true;         // TANDEM_VK_FUSE=0: every node its own dispatch
    // The io and collective buffers in host-cached memory where there is some (the host reads
    // the step's outputs there); TANDEM_VK_IO_CACHED=0: the first host-coherent type, as before.
    bool io_cached_ = true;
    uint32_t nodes_in_cb_ = 0;  // nodes recorded into cb_
    bool split_submit_ = true;
    std::vector<Weight> weights_;
    std::vector<Buffer> kv_;
    std::vector<KvDesc> kv_desc_;
    Buffer scratch_, io_, moe_h_, collective_buf_;
    Buffer attn_part_;      // split-K attention partials (counted in other_bytes())
    Buffer q8_buf_;         // decode matvec activations as int8 (counted in other_bytes())
    Buffer split_buf_;      // the tiled matmul's split-input parts (counted in other_bytes())
    Buffer x16_buf_;        // a prefill matmul's input as f16 (f16_input; counted in other_bytes())
    uint64_t x16_src_ = 0;  // the address x16_buf_ was made from while recording (0: none)
    int64_t x16_rows_ = 0, x16_cols_ = 0;
    // What q8_buf_ holds while a step is recorded: the address of the input it quantises (0:
    // nothing usable), reset by every node that is not a MatMul.
    uint64_t q8_src_ = 0;
    int64_t q8_src_cols_ = 0, q8_src_rows_ = 0;
    bool q8_alt_ = false;  // q8_src_'s activations are at q8_half_ (RESID's), not byte 0
    uint64_t q8_half_ = 0;
    // A norm folded into the matvecs (try_fuse_resid_norm): its output y is not written; q8
    // matvecs reading it take the alt activations with NORM_EPS. Anything else reading it while
    // it is live (nodes up to `last`) has it written first (materialise_norm, from the sum x).
    struct PendingNorm {
        TensorId id = kNoTensor;
        size_t last = 0;
        Ref y, x, w;
        int64_t cols = 0, rows = 0;
        float eps = 0.0f;
    };
    PendingNorm pending_norm_;
    bool norm_fuse_ = true;  // TANDEM_VK_NORM_FUSE=0: norms dispatch on their own
    TensorUses uses_;        // of the graph being recorded (try_fuse_resid_norm)
    // Nodes already recorded with an earlier one out of order (the ropes and K store of a q + k
    // group whose v has another weight type), by index; reset per recording.
    std::vector<bool> done_;
    int splitk_force_ = -1;  // TANDEM_VK_SPLITK: 0 off, N > 0 that many splits; -1 planned
    // TANDEM_VK_ATTN_MERGE=0: split-K attention's splits merged by attention_combine, not by
    // the last split workgroup (A/B runs and the test holding the two together).
    bool merge_attention_ = true;
    // Prefill attention: 0 one row a workgroup, 1 tiles (attention_flash.comp), 2 tiles on
    // cooperative matrices where the device has them (TANDEM_VK_FLASH; default 2).
    int flash_mode_ = 2;
    bool flash_coopmat_ok_ = true;  // false once its check failed or its pipeline was refused
    bool flash_coopmat_checked_ = false;
    std::vector<float> gather_;
    std::vector<size_t> gather_sizes_;
    std::vector<uint64_t> input_offset_, output_offset_;  // in io_, by slot
    std::map<const Node*, uint64_t> rope_table_;          // in io_, by Rope node
    // One rope table's per-step fill: cos / sin of positions (input pos_slot, T of them) times
    // scale times the inverse frequencies, at byte off of io_.
    struct RopeFill {
        uint64_t off;
        int64_t T;
        int pos_slot;
        double scale;
        std::vector<double> inv;  // [half]: base^(-2i / n_rot) / factor_i, computed once
        // [half]: cos / sin of scale * inv[i], the angle one position adds
        std::vector<double> step_cos, step_sin;
        // The last position filled (-1: none yet), its cos / sin and how many positions were
        // stepped to since libm gave them: the next step (a decode's one position) goes on from
        // there.
        int64_t last_pos = -1, stepped = 0;
        std::vector<double> cos_last, sin_last;
    };
    std::vector<RopeFill> rope_fills_;
    // What rope_table_ and rope_fills_ were placed for (place_rope_tables does it again only
    // for another graph, io start or set of weights: at 8B the placing and the frequencies'
    // pow() took ~100 us of every replayed decode step on the H200's host).
    struct RopePlanKey {
        uint64_t fingerprint = 0;
        const Node* nodes = nullptr;
        uint64_t at = 0, weights = 0;
        bool operator==(const RopePlanKey&) const = default;
    } rope_key_;
    uint64_t rope_end_ = 0;        // the io byte after the tables placed for rope_key_
    uint64_t weight_uploads_ = 0;  // bumped by every upload_weight
    std::vector<Range> pending_reads_, pending_writes_;
    uint64_t weight_bytes_ = 0, kv_bytes_ = 0;
    uint32_t barriers_ = 0;
    bool recording_ = false;
    std::unique_ptr<Profiler> profiler_;  // TANDEM_VK_PROFILE=1: GPU time per op
    double copy_bw_ = 0;
    uint32_t weights_imported_ = 0, weights_copied_ = 0;  // since the last allocate_kv (logged)
    std::string import_refused_;
    bool import_weights_ = false;   // try VK_EXT_external_memory_host for weights
    bool placement_probe_ = false;  // time imported weights against device reads (auto)
    bool repack_weights_ = false;   // discrete GPUs; TANDEM_VK_REPACK=1/0 forces
    Collective* collective_ = nullptr;
};

}  // namespace tandem::vk
