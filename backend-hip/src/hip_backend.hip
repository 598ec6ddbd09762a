// HIP backend: device buffers, step staging, node dispatch, step-graph replay and, on APUs,
// weights used in place from the file mapping. Kernels live in kernels/.
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "hip_backend.h"
#include "hip_buffers.h"
#include "hip_host_ranges.h"
#include "hip_mma_check.h"
#include "hip_ops.h"
#include "hip_profile.h"
#include "hip_step_times.h"
#include "tandem/backend/collective.h"
#include "tandem/backend/fusion.h"
#include "tandem/backend/weight_placement.h"
#include "tandem/backend/weight_repack.h"
#include "tandem/common/error.h"
#include "tandem/common/sysinfo.h"

namespace tandem::hip {
namespace {

uint64_t align_up(uint64_t n, uint64_t a) {
    return (n + a - 1) / a * a;
}

// "0"/"1" switches for A/B runs and for exercising the unified-memory path on discrete GPUs.
int env_switch(const char* name, int dflt) {
    const char* v = std::getenv(name);
    if (!v || !*v) return dflt;
    return std::string(v) == "0" ? 0 : 1;
}

// Bytes 0..255 of the step's device io buffer hold n_past (kv_store and attention read it
// there, so a replayed graph sees the step's position); inputs and outputs follow.
constexpr uint64_t kNPastBytes = 256;
constexpr size_t kMaxGraphs = 16;
// Why an APU's hipMalloc runs out early, for the lines that say a buffer went to host memory.
constexpr const char* kCarveOutHint =
    " (on an APU, ROCm may give hipMalloc only the VRAM carve-out set in the firmware; the rest "
    "of memory, GTT, is still used this way)";

class HipBackend final : public Backend {
  public:
    explicit HipBackend(DeviceInfo info) : info_(std::move(info)) {
        check(hipSetDevice(info_.index), "selecting the device");
        check(hipStreamCreate(&stream_), "creating the stream");
        check(hipEventCreate(&done_), "creating the step event");
        graphs_enabled_ = env_switch("TANDEM_HIP_GRAPHS", 1) != 0 && !profile_.on();
        if (profile_.on()) profile_hold_ = std::make_unique<MappedFlag>();
        if (hipDeviceGetAttribute(&clock_khz_, hipDeviceAttributeClockRate, info_.index) !=
                hipSuccess ||
            clock_khz_ <= 0)
            clock_khz_ = 2000000;
        q8_enabled_ = env_switch("TANDEM_HIP_Q8", 1) != 0;
        qkv_rope_ = env_switch("TANDEM_HIP_QKV_ROPE", 1) != 0;
        norm_fuse_ = env_switch("TANDEM_HIP_NORM_FUSE", 1) != 0;
        repack_ = env_switch("TANDEM_HIP_REPACK", 1) != 0;
        moe_q8_ = env_switch("TANDEM_HIP_MOE_Q8", 1) != 0;
        moe_mma_ = env_switch("TANDEM_HIP_MOE_MMA", 1) != 0;
        mma_x16_ = env_switch("TANDEM_HIP_MMA_X16", 1) != 0;
        mma_f32_decode_ = env_switch("TANDEM_HIP_MMA_F16DQ", 1) == 0;
        if (const char* v = std::getenv("TANDEM_HIP_MMA_TOKS")) mma_wide_ = std::atoi(v) == 128;
        matmul_split_ = env_switch("TANDEM_HIP_MATMUL_SPLIT", 1) != 0;
        // TANDEM_HIP_HOST_WEIGHTS: 0 copies the weights, 1 keeps them in place unmeasured, auto
        // keeps them in place only where the GPU reads them about as fast as device memory (the
        // default on integrated GPUs, see tandem/backend/weight_placement.h).
        const char* hw = std::getenv("TANDEM_HIP_HOST_WEIGHTS");
        const std::string host_mode = hw && *hw ? hw : info_.unified_memory ? "auto" : "0";
        host_weights_ = host_mode != "0";
        placement_probe_ = host_mode == "auto";
        // TANDEM_HIP_HOST_BUFFERS: 0 device memory only, 1 host memory mapped for the GPU for
        // every buffer (tests, on any GPU), auto device memory while hipMalloc has room, then host
        // memory (the default on integrated GPUs, see BufferHome).
        const char* hb = std::getenv("TANDEM_HIP_HOST_BUFFERS");
        const std::string buffer_mode = hb && *hb ? hb : info_.unified_memory ? "auto" : "0";
        home_ = buffer_mode == "0"   ? BufferHome::Device
                : buffer_mode == "1" ? BufferHome::Host
                                     : BufferHome::DeviceThenHost;
        if (const char* v = std::getenv("TANDEM_HIP_DEVICE_LIMIT_MIB"))
            ledger_->limit = uint64_t(std::max(0L, std::atol(v))) << 20;
        mma_prefill_ = env_switch("TANDEM_HIP_MMA", 1) != 0 && mma_prefill_passes();
        mma_attention_ = mma_prefill_ && mma_attention_passes();
        info_.f16_prefill_matmul = mma_prefill_;
        info_.f16_prefill_attention = mma_attention_;
        info_.f16_decode_attention = mma_attention_ && attention_split_mma_enabled();
    }
    ~HipBackend() override {
        (void)hipStreamSynchronize(stream_);
        drop_graphs();
        unmap_host_weights();
        (void)hipEventDestroy(done_);
        (void)hipStreamDestroy(stream_);
    }
    const DeviceInfo& device() const override { return info_; }
    bool can_compute() const override { return true; }

    void upload_weight(int slot, const WeightDesc& w, bool keep_host) override {
        if (slot < 0) throw Error("hip backend: negative weight slot for '" + w.name + "'");
        if (w.nbytes > 0 && !w.data)
            throw Error("hip backend: weight '" + w.name + "' has no data");
        drop_graphs();
        plans_.clear();
        if (static_cast<size_t>(slot) >= weights_.size()) weights_.resize(slot + 1);
        Weight& dst = weights_[slot];
        weight_bytes_ -= dst.desc.nbytes;
        dst.desc = w;
        dst.buf = DeviceBuffer();
        dst.dev = nullptr;
        dst.host = nullptr;
        dst.kind = w.type;
        weight_bytes_ += w.nbytes;
        if (host_weights_ && keep_host && w.nbytes > 0) {
            // Used in place: registered with the runtime (merged page ranges) before the next
            // step, see map_host_weights().
            dst.host = static_cast<const uint8_t*>(w.data);
            host_map_stale_ = true;
            return;
        }
        copy_weight(dst);
    }

    void allocate_kv(const std::vector<KvDesc>& kv) override {
        drop_graphs();
        plans_.clear();
        kv_.clear();
        kv_bytes_ = 0;
        uint64_t in_host = 0;
        for (const auto& d : kv) {
            if (d.type != DType::F16 && d.type != DType::F32)
                throw Error("hip backend: KV cache type " + std::string(dtype_name(d.type)) +
                            " is not supported (f16 or f32)");
            const uint64_t n =
                row_bytes(d.type, static_cast<uint64_t>(d.width)) * uint64_t(d.n_ctx);
            Kv k{d, buffer(n, false)};  // one line below for all of it
            check(hipMemsetAsync(k.buf.data(), 0, n, stream_), "clearing the KV cache");
            kv_bytes_ += n;
            if (k.buf.in_host_memory()) in_host += n;
            kv_.push_back(std::move(k));
        }
        check(hipStreamSynchronize(stream_), "clearing the KV cache");
        if (in_host && home_ != BufferHome::Host)
            std::fprintf(stderr,
                         "hip backend: %.1f MiB of the KV cache's %.1f MiB are in host memory "
                         "mapped for the GPU: hipMalloc had no room left%s\n",
                         double(in_host) / (1 << 20), double(kv_bytes_) / (1 << 20),
                         info_.unified_memory ? kCarveOutHint : "");
    }

    void reserve_scratch(uint64_t bytes) override {
        if (bytes <= scratch_.size()) return;
        drop_graphs();
        scratch_ = buffer(bytes);
    }

    void set_collective(Collective* c) override {
        collective_ = c;
        plans_.clear();  // their collective staging sizes depend on the ranks
    }
    uint64_t weight_bytes() const override { return weight_bytes_; }
    uint64_t kv_bytes() const override { return kv_bytes_; }
    uint64_t scratch_bytes() const override { return scratch_.size(); }
    // Staging, step io, MoE hidden rows. (No `override`: the base declares these in newer
    // revisions of backend.h; -Wno-inconsistent-missing-override keeps both building.)
    virtual uint64_t other_bytes() const {
        return io_dev_.size() + moe_scratch_.size() + attn_scratch_.size() + q8_scratch_.size() +
               q8_alt_.size() + norm_ss_.size() + split_scratch_.size() + x16_scratch_.size();
    }
    // Bytes/s read + written by one large device-to-device copy (hipMemcpy D2D, 1 GiB or a
    // quarter of the free memory), measured once: decode's yardstick.
    virtual double copy_bandwidth();

    void compute(const Graph& g, const StepIO& io) override;

  private:
    struct Weight {
        WeightDesc desc;
        DeviceBuffer buf;               // own copy in device memory, or
        const uint8_t* host = nullptr;  // the caller's bytes, used in place once mapped
        const uint8_t* dev = nullptr;   // what kernels read
        DType kind = DType::F32;        // the layout they read: desc.type or a repacked one
    };
    struct Kv {
        KvDesc desc;
        DeviceBuffer buf;
    };

    uint8_t* data_of(const Graph& g, TensorId id) const;
    const Weight& weight_of(const Graph& g, TensorId id) const;
    const int32_t* n_past_dev() const { return reinterpret_cast<const int32_t*>(io_dev_.data()); }
    // What a graph asks of this backend, found (every node checked) the first time its
    // fingerprint is seen; later steps of it check only their inputs.
    struct StepPlan {
        uint64_t key = 0;
        size_t n_inputs = 0, n_outputs = 0;  // StepIO's slot counts it was made for
        uint64_t moe_floats = 0, collective_floats = 0, attn_floats = 0, q8_bytes = 0,
                 split_floats = 0, x16_bytes = 0;
        bool few_tokens = false;  // no matmul past the matvec path's tokens (graph-eligible)
        std::vector<uint64_t> in_bytes, out_bytes;  // per io slot, 0 where the graph has none
        std::vector<TensorId> io_tensors;           // inputs and outputs, for their checks
    };
    StepPlan make_step_plan(const Graph& g, size_t n_inputs, size_t n_outputs) const;
    const StepPlan& step_plan(const Graph& g, const StepIO& io);
    void layout_io(const Graph& g, const StepPlan& plan, const StepIO& io);
    void enqueue_step(const Graph& g);
    void enqueue_nodes_profiled(const Graph& g);
    void hold_stream();     // the stream waits for the next release_stream (profiler)
    void release_stream();  // the last hold_stream's wait ends (no-op without the profiler)
    hipGraphExec_t step_graph(const Graph& g);
    uint64_t step_key(const Graph& g) const;
    void drop_graphs();
    // Copies dst.desc's bytes to device memory (repacked where the kernels read another layout).
    void copy_weight(Weight& dst);
    void map_host_weights();
    // Registers the page ranges of the weights used in place and points them there; false (and
    // why) where the runtime refuses, with nothing left registered.
    bool register_host_weights(std::string* why);
    void unmap_host_weights();
    // Read bandwidth of registered weight pages against device memory
    // (tandem/backend/weight_placement.h).
    PlacementProbe probe_in_place_reads();
    // Seconds the work `enqueue` puts on the stream takes (events around it); waits for it.
    double time_on_stream(const std::function<void()>& enqueue);
    // The weights used in place copied to device memory; false (and why) if an allocation failed,
    // with every weight back in place.
    bool copy_host_weights(std::string* why);
    // Enqueues nodes[at] (with the nodes after it where one launch runs them: add + norm,
    // rope + store, matmuls of one input) and returns how many nodes that was.
    size_t run_at(const Graph& g, size_t at);
    void run_node(const Graph& g, const Node& n);
    // Leaves x [rows, n_in] quantised in q8_scratch_ (unless it already is).
    void quantise_input(const float* x, int64_t rows, int64_t n_in);
    // Nodes at.. that are 2-3 MatMuls of one input, weight type and row length on the q8
    // path (q/k/v, gate/up) as one launch; returns the nodes run (0: none, run nodes[at] alone).
    size_t run_matvec_group(const Graph& g, size_t at);
    // q/k/v at nodes at.. followed by their ropes and KV stores: the group's launch does those
    // too (launch_matvec_q8_parts with rope); false: not applicable.
    bool qkv_rope_plan(const Graph& g, size_t at, DType type, Q8Rope* rope);
    // The (cos, sin) table of a step's positions for a rope configuration: computed by the
    // step's first launch that needs it (launch_rope_table), then shared by every layer's;
    // null when the step already has kRopeTables of them.
    const float2* rope_table(const int32_t* pos, int64_t rows, int64_t n_rot, float freq_base,
                             float freq_scale, const float* factors);
    // Nodes at, at + 1: an Add and the RmsNorm of its sum over whole rows as one launch (and
    // the q8 activations when a q8 matmul reads the norm next); returns 2, or 0: not applicable.
    size_t run_add_norm(const Graph& g, size_t at);
    // Nodes at, at + 1: a Rope and the KvStore of its output as one launch; 2, or 0.
    size_t run_rope_store(const Graph& g, size_t at);
    // Nodes at..at + 5: the q/k norms, ropes and KV stores after q/k/v (match_qk_norm_rope) as one
    // decode launch (launch_qk_norm_rope; off with the q/k/v fusion, TANDEM_HIP_QKV_ROPE=0); 6,
    // or 0.
    size_t run_qk_norm_rope(const Graph& g, size_t at);
    // Nodes at..: a q8 matvec, (its one-rank AllReduce,) the residual Add of its output and the
    // RMSNorm of that sum over whole rows (match_matvec_resid_norm), read next by a q8 matvec:
    // one launch
    // (launch_matvec_q8_resid_norm) writes the sum and leaves the norm to the matvecs reading
    // it (pending_). Returns the nodes run, 0: not applicable.
    size_t run_matvec_resid_norm(const Graph& g, size_t at);
    bool launch_v_first(const Graph& g, size_t vi, const float* x, int64_t rows, int64_t n_in);
    // The pending norm's output written after all (a reader other than a q8 matvec); clears it.
    void materialise_norm();
    void set_q8_src(const float* x, int64_t rows, int64_t cols) {
        q8_src_ = x, q8_rows_ = rows, q8_cols_ = cols;
        q8_alt_in_ = false;
    }
    // What a q8 matvec of q8_src_ reads: its activations, and the norm it applies (or null).
    const void* q8_in() const { return q8_alt_in_ ? q8_alt_.data() : q8_scratch_.data(); }
    const Q8Norm* q8_norm() const {
        return pending_.y && q8_alt_in_ && q8_src_ == pending_.y ? &pending_.q8 : nullptr;
    }
    std::string profile_key(const Graph& g, const Node& n, bool decode) const;
    bool q8_for_next_matmul(const Graph& g, const Node& n) const;
    void check_node(const Graph& g, const Node& n) const;
    bool multi_rank() const { return collective_ && collective_->n_ranks() > 1; }
    void host_collective(const Graph& g, const Node& n);

    DeviceInfo info_;
    hipStream_t stream_ = nullptr;
    hipEvent_t done_ = nullptr;
    std::vector<Weight> weights_;
    std::vector<Kv> kv_;
    DeviceBuffer scratch_;
    DeviceBuffer moe_scratch_;    // expert FFN hidden rows [2, n_tok * k, n_ff]
    DeviceBuffer attn_scratch_;   // split decode attention: merge tickets, then the partials
    DeviceBuffer q8_scratch_;     // decode matvec input quantised to int8 blocks
    DeviceBuffer split_scratch_;  // split-input parts of the tiled and matrix-unit matmuls
    // A prefill matmul's input as f16 (launch_to_f16) for the matrix-unit kernel: converted once
    // for the matmuls that share it (q/k/v, gate/up), where each of their tiles converted its
    // own f32 rows (8B pp512 +9 % on the H200, Q4_0); x16_src_ is what it holds, like q8_src_.
    DeviceBuffer x16_scratch_;
    const float* x16_src_ = nullptr;
    int64_t x16_rows_ = 0, x16_cols_ = 0;
    const uint16_t* f16_input(const float* x, int64_t rows, int64_t n_in);
    // Whether a matmul of `rows` tokens with weights of `type` reads its input from
    // x16_scratch_ (the sizing before a step and run_node ask the same).
    bool takes_x16(int64_t rows, DType type) const {
        return mma_x16_ && rows > kMatvecMaxTokens && mma_takes(type);
    }
    // Rope (cos, sin) tables of the step being enqueued (rope_table): kRopeTables slots of
    // [kMatvecMaxTokens, kRopeTableHalf] float2, and what each holds.
    static constexpr int kRopeTables = 4;
    static constexpr int64_t kRopeTableHalf = 512;                                // n_rot / 2 up to
    static constexpr int64_t kRopeTableSlot = kMatvecMaxTokens * kRopeTableHalf;  // float2s
    struct RopeTableKey {
        const int32_t* pos;
        const float* factors;
        int64_t rows, n_rot;
        float freq_base, freq_scale;
    };
    DeviceBuffer rope_tables_;
    std::vector<RopeTableKey> rope_keys_;
    // The matvec input q8_scratch_ holds (while enqueueing a step): consecutive matmuls of
    // one input (q/k/v, gate/up) quantise it once; any other node forgets it.
    const float* q8_src_ = nullptr;
    int64_t q8_rows_ = 0, q8_cols_ = 0;
    // An RMSNorm folded into the matvec before it (run_matvec_resid_norm): its output y is not
    // written; q8_alt_ holds the q8 activations of x * w and norm_ss_ the sums of squares of x,
    // which the q8 matvecs reading y take (q8_norm). Anything else reading y while it is live
    // (nodes up to `last`) has it written first (materialise_norm).
    struct PendingNorm {
        float* y = nullptr;
        TensorId id = kNoTensor;
        size_t last = 0;
        const float* x = nullptr;
        const float* w = nullptr;
        int64_t cols = 0, rows = 0;
        Q8Norm q8;
    };
    PendingNorm pending_;
    TensorUses uses_;         // of the step being enqueued (run_matvec_resid_norm)
    DeviceBuffer q8_alt_;     // the q8 activations run_matvec_resid_norm leaves
    DeviceBuffer norm_ss_;    // and its sums of squares [rows, cols / 32]
    bool q8_alt_in_ = false;  // q8_src_'s activations are in q8_alt_ (else q8_scratch_)
    bool norm_fuse_ = true;   // TANDEM_HIP_NORM_FUSE=0: norms launch on their own
    bool q8_enabled_ = true;
    bool qkv_rope_ = true;  // q/k/v's launch ropes and stores (TANDEM_HIP_QKV_ROPE=0: off)
    // Nodes already enqueued with an earlier one out of order (the ropes and K store of a q + k
    // group whose v has another weight type), by index; reset per step.
    std::vector<bool> enqueued_;
    PinnedBuffer collective_host_;
    std::vector<float> gather_;
    std::vector<size_t> gather_sizes_;
    // Step inputs and outputs live in one device buffer (after n_past) and one pinned buffer,
    // at the same offsets.
    DeviceBuffer io_dev_;
    PinnedBuffer staging_;
    std::vector<uint64_t> in_off_, out_off_;
    uint64_t in_end_ = kNPastBytes;  // n_past and inputs: [0, in_end_)
    uint64_t weight_bytes_ = 0, kv_bytes_ = 0;
    Collective* collective_ = nullptr;
    // Captured steps by key (most recent last); a key is captured the second time it is seen,
    // so one-off prefill shapes run eagerly.
    struct CapturedStep {
        uint64_t key;
        hipGraphExec_t exec;
    };
    std::vector<CapturedStep> graphs_;
    std::vector<uint64_t> seen_keys_;
    // Step plans by key (most recent last); dropped when the weights, the KV cache or the
    // collective change. H200, 8B decode: checking every node each step took ~15 us of host
    // time a token while the GPU waited (docs/hip.md, session 36).
    std::vector<StepPlan> plans_;
    static constexpr size_t kMaxPlans = 16;
    bool graphs_enabled_ = true;
    // Where buffers go (BufferHome) and the device bytes they hold; buffer() allocates them.
    BufferHome home_ = BufferHome::Device;
    std::shared_ptr<DeviceLedger> ledger_ = std::make_shared<DeviceLedger>();
    bool host_fallback_said_ = false;
    DeviceBuffer buffer(uint64_t n, bool say = true);  // say: one stderr line at the first fallback
    // Unified memory: registered page ranges of the weights used in place.
    bool host_weights_ = false, host_map_stale_ = false;
    bool placement_probe_ = false;  // measure in place against device reads before keeping it
    // Q4_0 / Q8_0 / Q6_K weights copied to the device are repacked (hip_packed.h);
    // TANDEM_HIP_REPACK=0 keeps the file layout.
    bool repack_ = true;
    bool moe_q8_ = true;  // TANDEM_HIP_MOE_Q8=0: expert FFNs on the element-wise kernels
    // The q8 path's prefill experts on the matrix units where mma_prefill_ is on
    // (TANDEM_HIP_MOE_MMA=0: the int8-dot kernels; TANDEM_HIP_MMA=0 turns both off).
    bool moe_mma_ = true;
    bool mma_x16_ = true;  // TANDEM_HIP_MMA_X16=0: the tiles convert their own f32 rows
    // TANDEM_HIP_MMA_F16DQ=0: repacked Q4_0 / Q8_0 through f32 in the tiles (the same bits)
    bool mma_f32_decode_ = false;
    // The matrix-unit matmul in 128-token tiles past 64 tokens (TANDEM_HIP_MMA_TOKS=128 / 64).
    // Measured on NVIDIA only (+20 %, docs/hip.md session 25); AMD keeps 64 until measured there:
    // the wide tile's 36 KB of LDS is one block a CU on CDNA's 64 KB, where 64 tokens fit two.
#if defined(TANDEM_HIP_ON_CUDA)
    bool mma_wide_ = true;
#else
    bool mma_wide_ = false;
#endif
    bool matmul_split_ = true;  // TANDEM_HIP_MATMUL_SPLIT=0: the matmuls never split their inputs
    // Prefill matmuls and attention on the matrix units (TANDEM_HIP_MMA=0: the f32 tiles), where
    // the device's compilation has them and each passed its check.
    bool mma_prefill_ = false, mma_attention_ = false;
    bool mma_prefill_passes();
    bool mma_attention_passes();
    std::string checked(std::string (*check_fn)(hipStream_t));
    bool mma_takes(DType t) const {
        return mma_prefill_ && mma_matmul_takes(t);
    }
    std::vector<HostRange> host_ranges_;
    std::vector<const uint8_t*> host_range_dev_;  // each range's device mapping
    double copy_bw_ = -1;
    NodeProfile profile_{env_switch("TANDEM_HIP_PROFILE", 0) != 0};
    StepTimes step_times_{env_switch("TANDEM_HIP_STEP_TIMES", 0) != 0};
    bool step_replayed_ = false;  // the last step_graph() found a captured graph
    // The profiler's holds (enqueue_nodes_profiled): the flag the host raises to hold_target_
    // as it releases each chunk of a step's nodes.
    static constexpr size_t kProfileChunk = 64;
    std::unique_ptr<MappedFlag> profile_hold_;
    int hold_target_ = 0;
    int clock_khz_ = 0;  // device clock, for the hold's bound
};

const HipBackend::Weight& HipBackend::weight_of(const Graph& g, TensorId id) const {
    const GraphTensor& t = g.tensor(id);
    if (t.slot < 0 || static_cast<size_t>(t.slot) >= weights_.size() || !weights_[t.slot].dev)
        throw Error("hip backend: weight '" + t.name + "' was never uploaded");
    const Weight& w = weights_[t.slot];
    if (w.desc.type != t.type || w.desc.ne != t.ne)
        throw Error("hip backend: weight '" + t.name + "' uploaded with another type or shape");
    return w;
}

uint8_t* HipBackend::data_of(const Graph& g, TensorId id) const {
    const GraphTensor& t = g.tensor(id);
    const auto slot = static_cast<size_t>(t.slot);
    switch (t.role) {
        case TensorRole::Weight:
            return const_cast<uint8_t*>(weight_of(g, id).dev);
        case TensorRole::KvCache:
            if (t.slot < 0 || slot >= kv_.size())
                throw Error("hip backend: KV tensor '" + t.name + "' was never allocated");
            return kv_[slot].buf.data();
        case TensorRole::Input:
            if (t.slot < 0 || slot >= in_off_.size())
                throw Error("hip backend: step input '" + t.name + "' not given");
            return io_dev_.data() + in_off_[slot];
        case TensorRole::Output:
            if (t.slot < 0 || slot >= out_off_.size())
                throw Error("hip backend: step output '" + t.name + "' not given");
            return io_dev_.data() + out_off_[slot];
        case TensorRole::Activation:
            return scratch_.data() + t.offset;
    }
    return nullptr;
}

void HipBackend::copy_weight(Weight& dst) {
    const WeightDesc& w = dst.desc;
    dst.buf = buffer(w.nbytes);
    dst.dev = dst.buf.data();
    dst.host = nullptr;
    dst.kind = w.type;
    if (repack_ && (w.type == DType::Q4_0 || w.type == DType::Q8_0 || w.type == DType::Q6_K) &&
        repackable(w)) {
        // Copied anyway, so repacked on the way (16-byte aligned quants for the kernels), in
        // pieces of about 64 MiB of rows.
        dst.kind = packed_type(w.type);
        const uint64_t rb = row_bytes(w.type, uint64_t(w.ne[0])), rows = w.nbytes / rb;
        const uint64_t step = std::max<uint64_t>(1, (64ull << 20) / rb);
        std::vector<uint8_t> piece(std::min(rows, step) * rb);
        for (uint64_t r = 0; r < rows; r += step) {
            const uint64_t n = std::min(step, rows - r);
            repack_rows(w, r, n, piece.data());
            check(hipMemcpy(dst.buf.data() + r * rb, piece.data(), n * rb, hipMemcpyHostToDevice),
                  ("uploading weight '" + w.name + "'").c_str());
        }
        return;
    }
    check(hipMemcpy(dst.buf.data(), w.data, w.nbytes, hipMemcpyHostToDevice),
          ("uploading weight '" + w.name + "'").c_str());
}

DeviceBuffer HipBackend::buffer(uint64_t n, bool say) {
    DeviceBuffer b(n, home_, ledger_);
    if (say && b.in_host_memory() && home_ != BufferHome::Host && !host_fallback_said_) {
        host_fallback_said_ = true;
        std::fprintf(stderr,
                     "hip backend: hipMalloc has no room for %.1f MiB (%.1f MiB of device memory "
                     "held); this and later buffers that do not fit go to host memory mapped for "
                     "the GPU%s\n",
                     double(n) / (1 << 20), double(ledger_->used) / (1 << 20),
                     info_.unified_memory ? kCarveOutHint : "");
    }
    return b;
}

// Unified memory: the weights used in place are registered (below) before the first step that
// follows their upload. Where the runtime refuses, they are copied to device memory with one
// stderr line. With the probe on (integrated GPUs), a read kernel over their pages is timed
// against device memory first, and they are copied where in place reads clearly slower and the
// copy fits (one stderr line with the figures either way).
void HipBackend::map_host_weights() {
    if (!host_map_stale_) return;
    host_map_stale_ = false;
    drop_graphs();
    plans_.clear();
    unmap_host_weights();
    std::string why;
    if (!register_host_weights(&why)) {
        std::fprintf(stderr,
                     "hip backend: cannot use the weights in place (%s); copying them to device "
                     "memory\n",
                     why.c_str());
        if (!copy_host_weights(&why)) throw Error("hip backend: " + why);
        return;
    }
    if (!placement_probe_ || host_ranges_.empty()) return;
    const PlacementChoice c = choose_weight_placement(probe_in_place_reads(), in_place_min_share());
    std::fprintf(stderr, "hip backend: %s\n", c.why.c_str());
    if (!c.copy) return;
    if (copy_host_weights(&why))
        unmap_host_weights();
    else
        std::fprintf(stderr, "hip backend: %s; the weights stay in place\n", why.c_str());
}

// Merged page ranges of the weights used in place (only the weights this backend was given: a
// shard never registers the other ranks' tensors, and never a bounding box over the file), each
// registered mapped and read-only where the runtime has the flag. On AMD each is asked for
// coarse-grained first: fine-grained (the default) is mapped uncached in the GPU's L2 on RDNA3
// (MTYPE_UC), and weights that nothing writes need no coherence. Releases that ignore the flag
// accept it, so the later attempts only run where a flag is refused.
bool HipBackend::register_host_weights(std::string* why) {
    std::vector<HostRange> used;
    for (const Weight& w : weights_)
        if (w.host) {
            const auto b = reinterpret_cast<uintptr_t>(w.host);
            used.push_back({b, b + w.desc.nbytes});
        }
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    std::vector<HostRange> ranges = page_ranges(used, page);
    std::vector<const uint8_t*> dev(ranges.size(), nullptr);
    std::vector<unsigned> flags;
#if defined(hipHostRegisterReadOnly) || defined(TANDEM_HIP_ON_CUDA)
    flags.push_back(hipHostRegisterMapped | hipHostRegisterReadOnly);
#endif
    flags.push_back(hipHostRegisterMapped);
#if !defined(TANDEM_HIP_ON_CUDA)
    for (size_t i = flags.size(); i-- > 0;)
        flags.insert(flags.begin() + ptrdiff_t(i), flags[i] | hipExtHostRegisterCoarseGrained);
#endif
    size_t done = 0;
    for (; done < ranges.size(); ++done) {
        void* p = reinterpret_cast<void*>(ranges[done].begin);
        const size_t n = ranges[done].end - ranges[done].begin;
        hipError_t e = hipErrorNoDevice;
        for (unsigned f : flags) {
            e = hipHostRegister(p, n, f);
            if (e == hipSuccess) break;
            (void)hipGetLastError();
        }
        void* d = nullptr;
        if (e == hipSuccess) {
            e = hipHostGetDevicePointer(&d, p, 0);
            if (e != hipSuccess) (void)hipHostUnregister(p);
        }
        if (e != hipSuccess) {
            (void)hipGetLastError();
            *why = hipGetErrorString(e);
            break;
        }
        dev[done] = static_cast<const uint8_t*>(d);
    }
    if (done < ranges.size()) {
        for (size_t i = 0; i < done; ++i)
            (void)hipHostUnregister(reinterpret_cast<void*>(ranges[i].begin));
        return false;
    }
    host_ranges_ = std::move(ranges);
    host_range_dev_ = std::move(dev);
    for (Weight& w : weights_)
        if (w.host) {
            const int64_t r = range_holding(host_ranges_, reinterpret_cast<uintptr_t>(w.host));
            w.dev = host_range_dev_[size_t(r)] +
                    (reinterpret_cast<uintptr_t>(w.host) - host_ranges_[r].begin);
        }
    return true;
}

void HipBackend::unmap_host_weights() {
    for (const HostRange& r : host_ranges_)
        (void)hipHostUnregister(reinterpret_cast<void*>(r.begin));
    host_ranges_.clear();
    host_range_dev_.clear();
}

bool HipBackend::copy_host_weights(std::string* why) {
    std::vector<std::pair<Weight*, const uint8_t*>> moved;  // weight, its in-place device pointer
    try {
        for (Weight& w : weights_)
            if (w.host) {
                moved.push_back({&w, w.dev});
                copy_weight(w);
            }
    } catch (const Error& e) {
        for (auto& [w, dev] : moved) {
            w->buf = DeviceBuffer();
            w->host = static_cast<const uint8_t*>(w->desc.data);
            w->dev = dev;
            w->kind = w->desc.type;
        }
        *why = std::string("copying the weights to device memory failed: ") + e.what();
        return false;
    }
    return true;
}

PlacementProbe HipBackend::probe_in_place_reads() {
    PlacementProbe p;
    for (const Weight& w : weights_)
        if (w.host) p.weight_bytes += w.desc.nbytes;
    size_t free_b = 0, total_b = 0;
    if (hipMemGetInfo(&free_b, &total_b) == hipSuccess) p.device_free = free_b;
    // A copy hipMalloc has no room for goes to host memory (BufferHome): on an APU with a small
    // carve-out that is where it lands, as fast as the carve-out (coarse-grained), where the
    // pages registered in place may not be. The host's available memory is the limit there, less
    // the weights in place: their pages stay pinned until the copies are made, though the kernel
    // may count them as reclaimable file cache. Not added to the carve-out's free memory, which
    // some releases already count in hipMemGetInfo.
    if (info_.unified_memory && home_ == BufferHome::DeviceThenHost) {
        const uint64_t host = host_memory().available;
        p.device_free =
            std::max<uint64_t>(p.device_free, host > p.weight_bytes ? host - p.weight_bytes : 0);
    }
    // The largest range, up to kProbeMaxBytes of it; below kProbeMinBytes caches would answer.
    size_t at = 0;
    for (size_t i = 1; i < host_ranges_.size(); ++i)
        if (host_ranges_[i].end - host_ranges_[i].begin >
            host_ranges_[at].end - host_ranges_[at].begin)
            at = i;
    const uint64_t bytes =
        std::min<uint64_t>(host_ranges_[at].end - host_ranges_[at].begin, kProbeMaxBytes) &
        ~uint64_t(4095);
    if (bytes < kProbeMinBytes) return p;
    int sms = 0;
    if (hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, info_.index) !=
            hipSuccess ||
        sms <= 0)
        sms = 32;
    const int blocks = sms * 8;
    try {
        DeviceBuffer dev_copy(bytes), sink(uint64_t(blocks) * sizeof(uint32_t));
        check(hipMemsetAsync(dev_copy.data(), 1, bytes, stream_), "filling the probe buffer");
        auto* out = reinterpret_cast<uint32_t*>(sink.data());
        // Best of 5 timed reads of each, alternating, after one untimed read of each.
        double best[2] = {0, 0};
        const void* src[2] = {host_range_dev_[at], dev_copy.data()};
        for (int round = 0; round < 6; ++round)
            for (int k = 0; k < 2; ++k) {
                const double s =
                    time_on_stream([&] { launch_read_probe(src[k], bytes, out, blocks, stream_); });
                if (round > 0 && s > 0) best[k] = std::max(best[k], double(bytes) / s);
            }
        p.in_place_bytes_per_s = best[0];
        p.device_bytes_per_s = best[1];
    } catch (const Error& e) {
        (void)hipGetLastError();
        std::fprintf(stderr, "hip backend: weight-placement probe not run (%s)\n", e.what());
    }
    return p;
}

double HipBackend::time_on_stream(const std::function<void()>& enqueue) {
    struct Events {
        hipEvent_t e[2] = {nullptr, nullptr};
        ~Events() {
            for (hipEvent_t x : e)
                if (x) (void)hipEventDestroy(x);
        }
    } ev;
    check(hipEventCreate(&ev.e[0]), "creating an event");
    check(hipEventCreate(&ev.e[1]), "creating an event");
    check(hipEventRecord(ev.e[0], stream_), "recording an event");
    enqueue();
    check(hipEventRecord(ev.e[1], stream_), "recording an event");
    check(hipEventSynchronize(ev.e[1]), "waiting for timed work");
    float ms = 0;
    check(hipEventElapsedTime(&ms, ev.e[0], ev.e[1]), "timing");
    return double(ms) * 1e-3;
}

double HipBackend::copy_bandwidth() {
    if (copy_bw_ >= 0) return copy_bw_;
    copy_bw_ = 0;
    size_t free_b = 0, total_b = 0;
    if (hipMemGetInfo(&free_b, &total_b) != hipSuccess) return 0;
    const uint64_t n = std::min<uint64_t>(uint64_t(1) << 30, free_b / 4) & ~uint64_t(255);
    if (n < (uint64_t(16) << 20)) return 0;
    DeviceBuffer a(n), b(n);
    check(hipMemcpyAsync(b.data(), a.data(), n, hipMemcpyDeviceToDevice, stream_), "copy");
    const int reps = 10;
    const double s = time_on_stream([&] {
        for (int i = 0; i < reps; ++i)
            check(hipMemcpyAsync(b.data(), a.data(), n, hipMemcpyDeviceToDevice, stream_), "copy");
    });
    if (s > 0) copy_bw_ = 2.0 * double(n) * reps / s;  // read + written
    return copy_bw_;
}

// Lays the step's n_past, inputs and outputs out in one device buffer and one pinned buffer (the
// same offsets) and fills the pinned side; enqueue_step() copies it to the device.
void HipBackend::layout_io(const Graph& g, const StepPlan& plan, const StepIO& io) {
    for (TensorId id : plan.io_tensors) {
        const GraphTensor& t = g.tensor(id);
        const bool in = t.role == TensorRole::Input;
        const auto slot = static_cast<size_t>(t.slot);
        if (in ? !io.inputs[slot] : !io.outputs[slot])
            throw Error("hip backend: step " + std::string(in ? "input '" : "output '") + t.name +
                        "' not given");
    }
    in_off_.assign(io.inputs.size(), 0);
    out_off_.assign(io.outputs.size(), 0);
    uint64_t at = kNPastBytes;
    for (size_t i = 0; i < plan.in_bytes.size(); ++i)
        in_off_[i] = at, at = align_up(at + plan.in_bytes[i], 256);
    in_end_ = at;
    for (size_t i = 0; i < plan.out_bytes.size(); ++i)
        out_off_[i] = at, at = align_up(at + plan.out_bytes[i], 256);
    if (at > io_dev_.size()) io_dev_ = buffer(at);
    uint8_t* pinned = staging_.reserve(at);
    std::memcpy(pinned, &io.n_past, sizeof io.n_past);
    for (size_t i = 0; i < plan.in_bytes.size(); ++i)
        if (plan.in_bytes[i]) std::memcpy(pinned + in_off_[i], io.inputs[i], plan.in_bytes[i]);
}

// The whole step on the stream: n_past and inputs pinned -> device, every node, outputs
// device -> pinned.
void HipBackend::enqueue_step(const Graph& g) {
    uint8_t* pinned = staging_.data();
    // n_past and the inputs are contiguous at the front: one copy.
    check(hipMemcpyAsync(io_dev_.data(), pinned, in_end_, hipMemcpyHostToDevice, stream_),
          "copying step inputs");
    q8_src_ = nullptr;
    x16_src_ = nullptr;
    pending_ = {};
    uses_ = tensor_uses(g);
    rope_keys_.clear();
    enqueued_.assign(g.nodes().size(), false);
    if (profile_.on()) {
        enqueue_nodes_profiled(g);
    } else {
        for (size_t i = 0; i < g.nodes().size();) i += run_at(g, i);
    }
    for (const GraphTensor& t : g.tensors()) {
        if (t.role != TensorRole::Output) continue;
        check(hipMemcpyAsync(pinned + out_off_[t.slot], io_dev_.data() + out_off_[t.slot],
                             t.nbytes(), hipMemcpyDeviceToHost, stream_),
              "copying step outputs");
    }
}

// TANDEM_HIP_PROFILE=1: the step's nodes in chunks of kProfileChunk, each behind a hold
// (launch_hold) that the host releases once the whole chunk is enqueued, so the GPU runs a chunk
// back to back and each node's events time its kernels, not the host's launches. One hold for the
// whole step deadlocks instead once the stream's launch queue fills (a 70B step of ~1200 nodes:
// the host blocks in a launch until the GPU drains, and the GPU waits for the host until the
// hold's bound); a fixed spin ran out there, and nodes after it were timed with the host's gaps
// in them (q/k/v 51.6 us a call, its kernel 21.4 by Nsight Compute; docs/hip.md, session 35).
void HipBackend::enqueue_nodes_profiled(const Graph& g) {
    const auto& nodes = g.nodes();
    bool decode = true;
    for (const Node& n : nodes)
        if (n.op == Op::MatMul && g.tensor(n.src[1]).rows() > kMatvecMaxTokens) decode = false;
    size_t chunk_start = 0;
    hold_stream();
    struct Release {  // also when a launch throws: the stream must not wait out the bound
        HipBackend* b;
        ~Release() { b->release_stream(); }
    } release{this};
    for (size_t i = 0; i < nodes.size(); ++i) {
        if (i - chunk_start >= kProfileChunk) {
            release_stream();
            hold_stream();
            chunk_start = i;
        }
        const Node& n = nodes[i];
        if (enqueued_[i]) {  // ran in an earlier node's launch: no row of its own
            profile_.node(i, "", 0.0);
            continue;
        }
        profile_.node(i, profile_key(g, n, decode),
                      n.op == Op::MatMul ? double(weight_of(g, n.src[0]).desc.nbytes) : 0.0);
        profile_.begin(i, stream_);
        // A fused run is timed as its first node ("+op" of the second, or "xN" matmuls with all
        // their weight bytes, x7: q/k/v with their ropes and stores); the others get no row.
        const size_t k = run_at(g, i);
        profile_.end(i, stream_);
        if (k > 1) {
            const bool mats = n.op == Op::MatMul;
            double bytes = 0;  // the matmuls' (q/k/v's rope and stores after them: none)
            for (size_t j = 0; mats && j < k && nodes[i + j].op == Op::MatMul; ++j)
                bytes += double(weight_of(g, nodes[i + j].src[0]).desc.nbytes);
            const std::string suffix = mats ? " x" + std::to_string(k)
                                       : n.op == Op::RmsNorm && k == 6
                                           ? "+rope+kv_store (q/k norms)"  // run_qk_norm_rope
                                           : "+" + std::string(op_name(nodes[i + 1].op));
            profile_.node(i, profile_key(g, n, decode) + suffix, bytes);
            for (size_t j = 1; j < k; ++j) profile_.node(i + j, "", 0.0);
        }
        i += k - 1;
    }
}

// The profiler's hold: the stream waits until the host's flag reaches the next number (5 s at
// most, so a host that never releases cannot stop the GPU for good).
void HipBackend::hold_stream() {
    launch_hold(profile_hold_->device(), ++hold_target_, static_cast<long long>(clock_khz_) * 5000,
                stream_);
}

void HipBackend::release_stream() {
    if (profile_hold_) profile_hold_->set(hold_target_);
}

uint64_t HipBackend::step_key(const Graph& g) const {
    uint64_t h = g.fingerprint();
    // Buffers the captured kernels and copies point into.
    for (const uint8_t* p : {scratch_.data(), io_dev_.data(), staging_.data(), moe_scratch_.data(),
                             attn_scratch_.data(), split_scratch_.data()})
        h = fingerprint_mix(h, reinterpret_cast<uintptr_t>(p));
    return h;
}

void HipBackend::drop_graphs() {
    for (const CapturedStep& c : graphs_) (void)hipGraphExecDestroy(c.exec);
    graphs_.clear();
    seen_keys_.clear();
}

// The step as a replayable graph: the cached one for this shape and these buffers, a fresh
// capture the second time a key is seen, or nullptr (run it eagerly: first sighting, or the
// runtime cannot capture, which turns graphs off for this backend).
hipGraphExec_t HipBackend::step_graph(const Graph& g) {
    const uint64_t key = step_key(g);
    step_replayed_ = false;
    for (size_t i = 0; i < graphs_.size(); ++i)
        if (graphs_[i].key == key) {
            std::rotate(graphs_.begin() + i, graphs_.begin() + i + 1, graphs_.end());
            step_replayed_ = true;
            return graphs_.back().exec;
        }
    if (std::find(seen_keys_.begin(), seen_keys_.end(), key) == seen_keys_.end()) {
        seen_keys_.push_back(key);
        if (seen_keys_.size() > 64) seen_keys_.erase(seen_keys_.begin());
        return nullptr;
    }
    if (hipStreamBeginCapture(stream_, hipStreamCaptureModeThreadLocal) != hipSuccess) {
        (void)hipGetLastError();
        graphs_enabled_ = false;
        return nullptr;
    }
    hipGraph_t graph = nullptr;
    try {
        enqueue_step(g);
    } catch (...) {
        (void)hipStreamEndCapture(stream_, &graph);
        if (graph) (void)hipGraphDestroy(graph);
        (void)hipGetLastError();
        throw;
    }
    hipGraphExec_t exec = nullptr;
    hipError_t e = hipStreamEndCapture(stream_, &graph);
    if (e == hipSuccess) e = hipGraphInstantiateWithFlags(&exec, graph, 0);
    if (graph) (void)hipGraphDestroy(graph);
    if (e != hipSuccess || !exec) {
        (void)hipGetLastError();
        std::fprintf(stderr, "hip backend: step graphs off (%s)\n", hipGetErrorString(e));
        graphs_enabled_ = false;
        return nullptr;
    }
    if (graphs_.size() >= kMaxGraphs) {
        (void)hipGraphExecDestroy(graphs_.front().exec);
        graphs_.erase(graphs_.begin());
    }
    graphs_.push_back({key, exec});
    return exec;
}

// Shapes and types a node needs here, checked before anything of the step is enqueued, so a
// graph this backend cannot run fails cleanly with the op's name.
void HipBackend::check_node(const Graph& g, const Node& n) const {
    switch (n.op) {
        case Op::Add:
        case Op::Mul:
        case Op::Scale:
        case Op::Softcap:
        case Op::GatedAct:
        case Op::RmsNorm:
        case Op::TakeRows:
        case Op::Copy:
        case Op::AllReduce:
        case Op::AllGather:
        case Op::Rope:
        case Op::KvStore:
            break;
        case Op::Attention:
            if (n.i[2] > attention_max_head_dim() || n.i[1] <= 0 || n.i[0] % n.i[1] != 0)
                throw Error("hip backend: attention with head_dim " + std::to_string(n.i[2]) +
                            ", " + std::to_string(n.i[0]) + " heads and " + std::to_string(n.i[1]) +
                            " KV heads is not supported (head_dim <= " +
                            std::to_string(attention_max_head_dim()) +
                            ", heads a multiple of KV heads)");
            break;
        case Op::GetRows:
        case Op::MatMul: {
            const DType t = g.tensor(n.src[0]).type;
            if (!weight_type_supported(t))
                throw Error(std::string("hip backend: ") + op_name(n.op) + " on " +
                            std::string(dtype_name(t)) + " weights is not implemented");
            break;
        }
        case Op::MoeRoute: {
            const int64_t n_expert = g.tensor(n.src[0]).cols();
            if (n.i[0] < 1 || n.i[0] > moe_max_top_k() || n.i[0] > n_expert ||
                g.tensor(n.out).cols() != 2 * int64_t(n.i[0]))
                throw Error("hip backend: moe_route k=" + std::to_string(n.i[0]) + " must be 1.." +
                            std::to_string(moe_max_top_k()) + ", at most n_expert (" +
                            std::to_string(n_expert) + "), with a [tokens, 2k] output");
            break;
        }
        case Op::MoeFfn: {
            const GraphTensor &x = g.tensor(n.src[0]), &route = g.tensor(n.src[1]),
                              &gate = g.tensor(n.src[2]), &up = g.tensor(n.src[3]),
                              &down = g.tensor(n.src[4]);
            for (const GraphTensor* w : {&gate, &up, &down})
                if (!weight_type_supported(w->type))
                    throw Error("hip backend: moe_ffn on " + std::string(dtype_name(w->type)) +
                                " weights is not implemented");
            const int64_t n_embd = gate.ne[0], n_ff = gate.ne[1], n_local = gate.ne[2];
            if (up.ne != gate.ne || down.ne != std::array<int64_t, 3>{n_ff, n_embd, n_local} ||
                x.cols() != n_embd || g.tensor(n.out).cols() != n_embd || route.cols() % 2 != 0 ||
                route.cols() / 2 < 1 || route.cols() / 2 > moe_max_top_k() ||
                route.rows() != x.rows())
                throw Error("hip backend: moe_ffn shapes do not fit (x " +
                            std::to_string(x.cols()) + " cols, gate " + std::to_string(n_embd) +
                            "x" + std::to_string(n_ff) + "x" + std::to_string(n_local) +
                            ", route " + std::to_string(route.cols()) + " cols)");
            break;
        }
        default:
            throw Error(std::string("hip backend: op ") + op_name(n.op) + " is not implemented");
    }
}

HipBackend::StepPlan HipBackend::make_step_plan(const Graph& g, size_t n_inputs,
                                                size_t n_outputs) const {
    StepPlan p;
    p.key = g.fingerprint();
    p.n_inputs = n_inputs;
    p.n_outputs = n_outputs;
    p.in_bytes.assign(n_inputs, 0);
    p.out_bytes.assign(n_outputs, 0);
    p.few_tokens = true;
    for (const Node& n : g.nodes()) {
        check_node(g, n);
        if (n.op == Op::MatMul && g.tensor(n.src[1]).rows() > kMatvecMaxTokens)
            p.few_tokens = false;
        if (n.op == Op::MoeFfn)
            p.moe_floats = std::max(
                p.moe_floats,
                moe_ffn_scratch_floats(
                    g.tensor(n.out).rows(), static_cast<int>(g.tensor(n.src[1]).cols() / 2),
                    g.tensor(n.src[2]).ne[0], g.tensor(n.src[2]).ne[1], g.tensor(n.src[2]).ne[2]));
        if (n.op == Op::MatMul && matmul_split_)
            p.split_floats =
                std::max(p.split_floats,
                         mat_mul_split_floats(g.tensor(n.src[0]).ne[0], g.tensor(n.src[0]).ne[1],
                                              g.tensor(n.src[1]).rows()));
        if (n.op == Op::MatMul &&
            takes_x16(g.tensor(n.src[1]).rows(), weight_of(g, n.src[0]).desc.type))
            p.x16_bytes = std::max(p.x16_bytes, uint64_t(g.tensor(n.src[1]).n_elements()) * 2);
        if (n.op == Op::MatMul && q8_enabled_) {
            const GraphTensor& x = g.tensor(n.src[1]);
            const Weight& wt = weight_of(g, n.src[0]);
            const WeightDesc& w = wt.desc;
            if (q8_matvec_supported(wt.kind, w.ne[0], w.ne[1], x.rows()))
                p.q8_bytes = std::max(p.q8_bytes, q8_act_bytes(w.ne[0], x.rows()));
        }
        if (n.op == Op::Attention)
            p.attn_floats = std::max(
                p.attn_floats, attention_scratch_floats(g.tensor(n.out).rows(), n.i[0], n.i[2]));
        if ((n.op == Op::AllReduce || n.op == Op::AllGather) && multi_rank())
            p.collective_floats = std::max<uint64_t>(
                p.collective_floats,
                uint64_t(std::max(g.tensor(n.src[0]).n_elements(), g.tensor(n.out).n_elements())));
    }
    for (size_t i = 0; i < g.tensors().size(); ++i) {
        const GraphTensor& t = g.tensors()[i];
        if (t.role != TensorRole::Input && t.role != TensorRole::Output) continue;
        const bool in = t.role == TensorRole::Input;
        auto& bytes = in ? p.in_bytes : p.out_bytes;
        if (t.slot < 0 || static_cast<size_t>(t.slot) >= bytes.size())
            throw Error("hip backend: step " + std::string(in ? "input '" : "output '") + t.name +
                        "' not given");
        bytes[t.slot] = std::max(bytes[t.slot], t.nbytes());
        p.io_tensors.push_back(static_cast<TensorId>(i));
    }
    return p;
}

const HipBackend::StepPlan& HipBackend::step_plan(const Graph& g, const StepIO& io) {
    const uint64_t key = g.fingerprint();
    for (size_t i = 0; i < plans_.size(); ++i)
        if (plans_[i].key == key && plans_[i].n_inputs == io.inputs.size() &&
            plans_[i].n_outputs == io.outputs.size()) {
            std::rotate(plans_.begin() + i, plans_.begin() + i + 1, plans_.end());
            return plans_.back();
        }
    StepPlan p = make_step_plan(g, io.inputs.size(), io.outputs.size());  // throws: none kept
    if (plans_.size() >= kMaxPlans) plans_.erase(plans_.begin());
    plans_.push_back(std::move(p));
    return plans_.back();
}

void HipBackend::compute(const Graph& g, const StepIO& io) {
    step_times_.entered();
    if (g.scratch_bytes() > scratch_.size())
        throw Error("hip backend: graph needs " + std::to_string(g.scratch_bytes()) +
                    " scratch bytes, " + std::to_string(scratch_.size()) + " reserved");
    map_host_weights();
    // Every node is checked, and the backend's own buffers sized, before anything is enqueued
    // (once per graph: the plan; nothing below drops plans_).
    const StepPlan& plan = step_plan(g, io);
    check_step_inputs(g, io);  // token ids and the KV cache's room, before anything is enqueued
    if (plan.moe_floats * sizeof(float) > moe_scratch_.size())
        moe_scratch_ = buffer(plan.moe_floats * sizeof(float));
    if (plan.split_floats * sizeof(float) > split_scratch_.size())
        split_scratch_ = buffer(plan.split_floats * sizeof(float));
    if (plan.x16_bytes > x16_scratch_.size()) {
        drop_graphs();  // captured steps point at the old buffer
        x16_scratch_ = buffer(plan.x16_bytes);
    }
    if (plan.attn_floats * sizeof(float) > attn_scratch_.size()) {
        attn_scratch_ = buffer(plan.attn_floats * sizeof(float));
        check(hipMemsetAsync(attn_scratch_.data(), 0, attention_zeroed_floats() * sizeof(float),
                             stream_),
              "clearing the attention tickets");
    }
    if (plan.q8_bytes > q8_scratch_.size()) {
        drop_graphs();  // captured steps point at the old buffers
        q8_scratch_ = buffer(plan.q8_bytes);
        q8_alt_ = buffer(plan.q8_bytes);
        norm_ss_ = buffer(plan.q8_bytes / 8);  // a float per 32 int8 values
    }
    if (plan.q8_bytes && !rope_tables_.size())  // once: captured steps point at it
        rope_tables_ = buffer(uint64_t(kRopeTables * kRopeTableSlot) * sizeof(float2));
    if (plan.collective_floats) collective_host_.reserve(plan.collective_floats * sizeof(float));
    layout_io(g, plan, io);
    // Host collectives synchronise mid-step, which a captured graph cannot. Steps of more tokens
    // than the matvec path takes run eagerly: their kernels are long enough that the launches
    // queue ahead of the GPU, so a graph saves nothing, and capturing one (a prompt chunk's
    // shape seen twice) cost more than the launches: H200, 8B Q4_0, the pp512 step that
    // captured ran 9586-9866 tok/s against 10526-10528 with no graphs (docs/hip.md, session 26).
    hipGraphExec_t exec =
        graphs_enabled_ && !multi_rank() && plan.few_tokens ? step_graph(g) : nullptr;
    step_times_.launching(stream_);
    if (exec)
        check(hipGraphLaunch(exec, stream_), "launching the step graph");
    else
        enqueue_step(g);
    check(hipGetLastError(), "launching kernels");
    check(hipEventRecord(done_, stream_), "recording the step event");
    step_times_.launched();
    check(hipEventSynchronize(done_), "running the step");
    step_times_.waited();
    if (profile_.on() && !exec) profile_.collect(g.nodes().size());
    const uint8_t* pinned = staging_.data();
    for (TensorId id : plan.io_tensors) {
        const GraphTensor& t = g.tensor(id);
        if (t.role == TensorRole::Output)
            std::memcpy(io.outputs[t.slot], pinned + out_off_[t.slot], t.nbytes());
    }
    step_times_.finished(exec && step_replayed_, done_);
}

// Tensor parallelism: the collective runs on the host between the work enqueued before the node
// and the work after it (the network, not the extra round trip, bounds this), as the Vulkan
// backend does. The source goes device -> pinned, the collective runs in place there (all-reduce)
// or gathers every rank's columns, and the result goes pinned -> device.
void HipBackend::host_collective(const Graph& g, const Node& n) {
    const GraphTensor& out = g.tensor(n.out);
    const auto n_src = static_cast<size_t>(g.tensor(n.src[0]).n_elements());
    const auto n_out = static_cast<size_t>(out.n_elements());
    auto* h = reinterpret_cast<float*>(collective_host_.reserve(1));  // sized in compute()
    check(hipMemcpyAsync(h, data_of(g, n.src[0]), n_src * sizeof(float), hipMemcpyDeviceToHost,
                         stream_),
          "copying collective input");
    release_stream();  // the profiler's hold: the stream must run for the wait to end
    check(hipStreamSynchronize(stream_), "running the step up to a collective");
    if (n.op == Op::AllReduce) {
        collective_->all_reduce_sum(h, n_src);
    } else {
        collective_->all_gather(h, n_src, gather_, gather_sizes_);
        // Rank r contributed [rows, cols_r]; interleave into [rows, sum cols_r].
        const int64_t rows = out.rows();
        int64_t col0 = 0;
        size_t at = 0;
        for (size_t sz : gather_sizes_) {
            const int64_t cols_r = static_cast<int64_t>(sz) / rows;
            if (col0 + cols_r > out.cols()) break;
            for (int64_t r = 0; r < rows; ++r)
                std::memcpy(h + r * out.cols() + col0, gather_.data() + at + r * cols_r,
                            sizeof(float) * static_cast<size_t>(cols_r));
            col0 += cols_r;
            at += sz;
        }
        if (col0 != out.cols())
            throw Error("all_gather: ranks gave " + std::to_string(col0) +
                        " columns, graph expects " + std::to_string(out.cols()));
    }
    check(
        hipMemcpyAsync(data_of(g, n.out), h, n_out * sizeof(float), hipMemcpyHostToDevice, stream_),
        "copying collective output");
    // The pinned buffer is reused by the next collective of the step: wait for this copy.
    check(hipStreamSynchronize(stream_), "copying collective output");
}

// Whether the node after n is a matmul that will read n's output as q8 activations.
bool HipBackend::q8_for_next_matmul(const Graph& g, const Node& n) const {
    const std::vector<Node>& nodes = g.nodes();
    const size_t at = static_cast<size_t>(&n - nodes.data());
    if (!q8_enabled_ || at + 1 >= nodes.size()) return false;
    const Node& next = nodes[at + 1];
    if (next.op != Op::MatMul || next.src[1] != n.out) return false;
    const GraphTensor& x = g.tensor(n.out);
    const Weight& wt = weight_of(g, next.src[0]);
    const WeightDesc& w = wt.desc;
    return w.ne[0] == x.cols() && q8_matvec_supported(wt.kind, w.ne[0], w.ne[1], x.rows()) &&
           q8_scratch_.size() >= q8_act_bytes(x.cols(), x.rows());
}

size_t HipBackend::run_at(const Graph& g, size_t at) {
    if (enqueued_[at]) return 1;  // enqueued with an earlier node (a q + k group's ropes)
    const Node& n = g.nodes()[at];
    if (pending_.y && at > pending_.last) {  // its output is read no more
        if (q8_src_ == pending_.y) q8_src_ = nullptr;
        pending_ = {};
    }
    // Only consecutive prefill matmuls share x16_scratch_ (a decode one may be fused with
    // nodes that write memory).
    if (n.op != Op::MatMul || g.tensor(n.src[1]).rows() <= kMatvecMaxTokens) x16_src_ = nullptr;
    if (n.op != Op::MatMul) {
        // A node other than a matmul may write what q8_scratch_ was quantised from.
        q8_src_ = nullptr;
        if (pending_.y && std::find(n.src.begin(), n.src.end(), pending_.id) != n.src.end())
            materialise_norm();
    }
    if (size_t k = run_add_norm(g, at);
        k || (k = run_qk_norm_rope(g, at)) || (k = run_rope_store(g, at)) ||
        (k = run_matvec_resid_norm(g, at)) || (k = run_matvec_group(g, at)))
        return k;
    run_node(g, g.nodes()[at]);
    return 1;
}

const uint16_t* HipBackend::f16_input(const float* x, int64_t rows, int64_t n_in) {
    auto* y = reinterpret_cast<uint16_t*>(x16_scratch_.data());
    if (x16_src_ == x && x16_rows_ == rows && x16_cols_ == n_in) return y;
    if (uint64_t(rows * n_in) * 2 > x16_scratch_.size() || n_in % 8 != 0) return nullptr;
    launch_to_f16(x, rows * n_in, y, stream_);
    x16_src_ = x, x16_rows_ = rows, x16_cols_ = n_in;
    return y;
}

void HipBackend::quantise_input(const float* x, int64_t rows, int64_t n_in) {
    if (q8_src_ == x && q8_rows_ == rows && q8_cols_ == n_in) return;
    if (pending_.y == x) materialise_norm();  // its q8 activations are gone: quantise y itself
    launch_quantize_q8(x, n_in, rows, q8_scratch_.data(), stream_);
    set_q8_src(x, rows, n_in);
}

size_t HipBackend::run_add_norm(const Graph& g, size_t at) {
    const auto& nodes = g.nodes();
    if (at + 1 >= nodes.size()) return 0;
    const Node &add = nodes[at], &norm = nodes[at + 1];
    if (add.op != Op::Add || norm.op != Op::RmsNorm || norm.src[0] != add.out) return 0;
    const GraphTensor& out = g.tensor(norm.out);
    const int64_t cols = out.cols(), rows = out.rows();
    if (norm.i[0] > 0 && norm.i[0] != cols) return 0;
    auto f32 = [&](TensorId id) { return reinterpret_cast<float*>(data_of(g, id)); };
    const float *a = f32(add.src[0]), *b = f32(add.src[1]);
    float *sum = f32(add.out), *y = f32(norm.out);
    const int64_t n = cols * rows;
    auto overlap = [n](const float* p, const float* q) { return p < q + n && q < p + n; };
    // Each thread reads its elements of a and b before writing them to sum; a block has read its
    // whole row before it writes y: y may share a row with an input (or anything, one row).
    auto safe_in = [&](const float* in) { return !overlap(sum, in) || sum == in; };
    auto safe_out = [&](const float* in) { return !overlap(y, in) || y == in || rows == 1; };
    if (!safe_in(a) || !safe_in(b) || overlap(y, sum) || !safe_out(a) || !safe_out(b)) return 0;
    const bool q8 = q8_for_next_matmul(g, norm);
    if (!launch_add_rms_norm(a, b, sum, norm.src[1] == kNoTensor ? nullptr : f32(norm.src[1]), cols,
                             rows, norm.f[0], y, q8 ? q8_scratch_.data() : nullptr, stream_))
        return 0;
    set_q8_src(q8 ? y : nullptr, rows, cols);
    return 2;
}

size_t HipBackend::run_matvec_resid_norm(const Graph& g, size_t at) {
    const Node& first = g.nodes()[at];
    if (!norm_fuse_ || !q8_enabled_ || first.op != Op::MatMul ||
        g.tensor(first.src[1]).rows() > kQ8NormMaxTokens)
        return 0;
    const auto m = match_matvec_resid_norm(g, at, uses_, !multi_rank());
    if (!m) return 0;
    const Node &mm = *m->mm, &norm = *m->norm;
    const GraphTensor& xt = g.tensor(mm.src[1]);
    const int64_t rows = xt.rows(), n_in = xt.cols(), cols = g.tensor(mm.out).cols();
    const Weight& w = weight_of(g, mm.src[0]);
    // The matvec itself on the q8 path too (rows of a multiple of 256: an FFN 640 wide took this
    // launch and its quantiser refused the input, HipSpeedPaths.FfnAfterAFoldedNorm).
    if (w.desc.ne[0] != n_in || !q8_matvec_supported(w.kind, n_in, cols, rows) ||
        !q8_for_next_matmul(g, norm) || q8_scratch_.size() < q8_act_bytes(n_in, rows))
        return 0;
    auto f32 = [&](TensorId id) { return reinterpret_cast<float*>(data_of(g, id)); };
    const float *x = f32(mm.src[1]), *r = f32(m->resid);
    float* sum = f32(m->add->out);
    const int64_t n = rows * cols;
    if (sum != r && sum < r + n && r < sum + n) return 0;  // in place or apart
    if (x == pending_.y) return 0;  // its q8 activations are in q8_alt_, which this launch writes
    if (pending_.y) materialise_norm();  // one pending norm at a time
    quantise_input(x, rows, n_in);
    const float* nw = norm.src[1] == kNoTensor ? nullptr : f32(norm.src[1]);
    if (!launch_matvec_q8_resid_norm(w.kind, w.dev, n_in, cols, q8_in(), rows,
                                     mm.src[2] == kNoTensor ? nullptr : f32(mm.src[2]), r, sum, nw,
                                     q8_alt_.data(), reinterpret_cast<float*>(norm_ss_.data()),
                                     stream_))
        return 0;
    pending_ = {};
    pending_.y = f32(norm.out), pending_.id = norm.out, pending_.last = m->last;
    pending_.x = sum, pending_.w = nw, pending_.cols = cols, pending_.rows = rows;
    pending_.q8 = Q8Norm{reinterpret_cast<const float*>(norm_ss_.data()), norm.f[0]};
    set_q8_src(pending_.y, rows, cols);
    q8_alt_in_ = true;
    return m->nodes;
}

void HipBackend::materialise_norm() {
    const PendingNorm p = pending_;
    pending_ = {};
    if (q8_src_ == p.y) q8_src_ = nullptr;  // q8_alt_ holds x * w, not the norm's output
    launch_rms_norm(p.x, p.w, p.cols, p.rows, p.q8.eps, p.y, stream_);
}

size_t HipBackend::run_rope_store(const Graph& g, size_t at) {
    const auto& nodes = g.nodes();
    if (at + 1 >= nodes.size()) return 0;
    const Node &rope = nodes[at], &store = nodes[at + 1];
    if (rope.op != Op::Rope || store.op != Op::KvStore || store.src[0] != rope.out) return 0;
    const GraphTensor& out = g.tensor(rope.out);
    const GraphTensor& cache = g.tensor(store.src[1]);
    if (cache.cols() != out.cols()) return 0;
    auto f32 = [&](TensorId id) { return reinterpret_cast<float*>(data_of(g, id)); };
    launch_rope(f32(rope.src[0]), reinterpret_cast<const int32_t*>(data_of(g, rope.src[1])),
                out.rows(), out.cols(), rope.i[0], rope.i[1],
                static_cast<RopeMode>(rope.i[2]) == RopeMode::Neox, rope.f[0], rope.f[1],
                rope.src[2] == kNoTensor ? nullptr : f32(rope.src[2]), f32(rope.out), stream_,
                data_of(g, store.src[1]), cache.type == DType::F16, n_past_dev());
    return 2;
}

size_t HipBackend::run_qk_norm_rope(const Graph& g, size_t at) {
    if (!qkv_rope_ || g.nodes()[at].op != Op::RmsNorm) return 0;
    const auto m = match_qk_norm_rope(g, at);
    if (!m) return 0;
    const Node &nq = *m->norm_q, &nk = *m->norm_k, &rq = *m->rope_q;
    const GraphTensor &q = g.tensor(nq.src[0]), &k = g.tensor(nk.src[0]);
    auto f32 = [&](TensorId id) { return reinterpret_cast<float*>(data_of(g, id)); };
    auto opt = [&](TensorId id) { return id == kNoTensor ? nullptr : f32(id); };
    QkNormRope a{};
    a.q = f32(nq.src[0]);
    a.k = f32(nk.src[0]);
    a.v = f32(m->store_v->src[0]);
    a.q_out = f32(rq.out);
    const int64_t rows = q.rows();
    if (rows != 1) return 0;  // the launch's one token; else no rope table for nothing
    a.cs = rope_table(reinterpret_cast<const int32_t*>(data_of(g, rq.src[1])), rows, m->head_dim,
                      rq.f[0], rq.f[1], opt(rq.src[2]));
    if (!a.cs) return 0;
    a.q_w = opt(nq.src[1]);
    a.k_w = opt(nk.src[1]);
    a.eps = nq.f[0];
    a.n_past = n_past_dev();
    a.k_cache = data_of(g, m->store_k->src[1]);
    a.v_cache = data_of(g, m->store_v->src[1]);
    a.cache_f16 = m->cache_f16;
    a.neox = m->neox;
    a.head_dim = m->head_dim;
    a.n_head = q.cols() / m->head_dim;
    a.n_kv_head = k.cols() / m->head_dim;
    a.n_tok = rows;
    return launch_qk_norm_rope(a, stream_) ? 6 : 0;
}

size_t HipBackend::run_matvec_group(const Graph& g, size_t at) {
    const auto& nodes = g.nodes();
    const Node& first = nodes[at];
    if (!q8_enabled_ || first.op != Op::MatMul) return 0;
    const GraphTensor& xt = g.tensor(first.src[1]);
    const int64_t rows = xt.rows(), n_in = xt.cols();
    const Weight& first_w = weight_of(g, first.src[0]);
    const WeightDesc& w0 = first_w.desc;
    const DType kind = first_w.kind;
    if (w0.ne[0] != n_in || q8_scratch_.size() < q8_act_bytes(n_in, rows)) return 0;
    Q8Matrix m[kQ8MaxParts];
    int n = 0;
    while (n < kQ8MaxParts && at + size_t(n) < nodes.size()) {
        const Node& k = nodes[at + size_t(n)];
        if (k.op != Op::MatMul || k.src[1] != first.src[1]) break;
        const Weight& w = weight_of(g, k.src[0]);
        if (w.kind != kind || w.desc.ne[0] != n_in) break;
        m[n] = Q8Matrix{
            w.dev, w.desc.ne[1],
            k.src[2] == kNoTensor ? nullptr : reinterpret_cast<const float*>(data_of(g, k.src[2])),
            reinterpret_cast<float*>(data_of(g, k.out))};
        ++n;
    }
    if (n < 2) return 0;
    const auto* x = reinterpret_cast<const float*>(data_of(g, first.src[1]));
    auto over_x = [&](const Q8Matrix& p) {
        return p.out < x + rows * n_in && x < p.out + p.n_out * rows;
    };
    // The quantised input must not be an output of the group (it is read by every part).
    for (int i = 0; i < n; ++i)
        if (over_x(m[i])) return 0;
    if (!q8_matvec_supported(kind, n_in, w0.ne[1], rows)) return 0;
    Q8Rope rope{};
    if (qkv_rope_plan(g, at, kind, &rope)) {
        // q's part writes the roped q (the Rope node's output), not the matmul's.
        Q8Matrix roped[3] = {m[0], m[1], m[2]};
        roped[0].out = reinterpret_cast<float*>(data_of(g, nodes[at + 3].out));
        // n == 2: v has another weight type (Q4_K_M's Q6_K attn_v) and a launch of its own,
        // reading x: after this one, or, where the roped q takes x's memory, before it.
        const bool v_first = n == 2 && over_x(roped[0]);
        if (n == 3 || !v_first || launch_v_first(g, at + 2, x, rows, n_in)) {
            quantise_input(x, rows, n_in);
            if (launch_matvec_q8_parts(kind, roped, n, n_in, q8_in(), rows, stream_, &rope,
                                       q8_norm())) {
                if (n == 2) {  // the ropes and the K store are done; v's store follows
                    enqueued_[at + 3] = enqueued_[at + 4] = enqueued_[at + 5] = true;
                    if (v_first) q8_src_ = nullptr;  // x's memory holds the roped q now
                    return 2;
                }
                // The roped q may take the memory of x (dead after q/k/v; the launch reads
                // only its q8 copy): q8_scratch_ then no longer quantises what x holds.
                if (over_x(roped[0])) q8_src_ = nullptr;
                return size_t(n) + 4;
            }
        }
    }
    quantise_input(x, rows, n_in);
    return launch_matvec_q8_parts(kind, m, n, n_in, q8_in(), rows, stream_, nullptr, q8_norm())
               ? size_t(n)
               : 0;
}

// v's matmul (node vi of a match_qkv_rope pattern: x is its input too) launched before the
// q + k launch whose roped q takes x's memory: a q8 matvec of x's q8 copy, its output apart from
// x. False, enqueueing nothing, where it cannot be.
bool HipBackend::launch_v_first(const Graph& g, size_t vi, const float* x, int64_t rows,
                                int64_t n_in) {
    const Node& v = g.nodes()[vi];
    if (g.tensor(v.src[0]).role != TensorRole::Weight) return false;
    const Weight& w = weight_of(g, v.src[0]);
    const int64_t n_out = w.desc.ne[1];
    auto* y = reinterpret_cast<float*>(data_of(g, v.out));
    if (w.desc.ne[0] != n_in || !q8_matvec_supported(w.kind, n_in, n_out, rows) ||
        (y < x + rows * n_in && x < y + rows * n_out))
        return false;
    quantise_input(x, rows, n_in);
    const float* bias =
        v.src[2] == kNoTensor ? nullptr : reinterpret_cast<const float*>(data_of(g, v.src[2]));
    if (!launch_matvec_q8(w.kind, w.dev, n_in, n_out, q8_in(), rows, bias, y, stream_, q8_norm()))
        return false;
    enqueued_[vi] = true;
    return true;
}

// q, k, v (nodes[at..at+2]) with their ropes and KV stores after them (match_qkv_rope): the
// matvec ropes and stores them itself when a block's rows can be whole rotation pairs of the
// type's layout; TANDEM_HIP_QKV_ROPE=0 turns it off.
bool HipBackend::qkv_rope_plan(const Graph& g, size_t at, DType type, Q8Rope* rope) {
    if (!qkv_rope_) return false;
    const auto m = match_qkv_rope(g, at);
    if (!m || !q8_rope_supported(type, m->head_dim)) return false;
    const Node& rq = *m->rope_q;
    rope->cs = rope_table(
        reinterpret_cast<const int32_t*>(data_of(g, rq.src[1])), g.tensor(rq.out).rows(),
        m->head_dim, rq.f[0], rq.f[1],
        rq.src[2] == kNoTensor ? nullptr : reinterpret_cast<const float*>(data_of(g, rq.src[2])));
    if (!rope->cs) return false;
    rope->n_past = n_past_dev();
    rope->k_cache = data_of(g, m->store_k->src[1]);
    rope->v_cache = data_of(g, m->store_v->src[1]);
    rope->cache_f16 = m->cache_f16;
    rope->neox = m->neox;
    rope->head_dim = m->head_dim;
    return true;
}

const float2* HipBackend::rope_table(const int32_t* pos, int64_t rows, int64_t n_rot,
                                     float freq_base, float freq_scale, const float* factors) {
    if (rows < 1 || rows > kMatvecMaxTokens || n_rot / 2 > kRopeTableHalf || !rope_tables_.size())
        return nullptr;
    auto* tables = reinterpret_cast<float2*>(rope_tables_.data());
    for (size_t i = 0; i < rope_keys_.size(); ++i) {
        const RopeTableKey& k = rope_keys_[i];
        if (k.pos == pos && k.factors == factors && k.rows == rows && k.n_rot == n_rot &&
            k.freq_base == freq_base && k.freq_scale == freq_scale)
            return tables + int64_t(i) * kRopeTableSlot;
    }
    if (rope_keys_.size() >= size_t(kRopeTables)) return nullptr;
    float2* t = tables + int64_t(rope_keys_.size()) * kRopeTableSlot;
    launch_rope_table(pos, rows, n_rot, freq_base, freq_scale, factors, t, stream_);
    rope_keys_.push_back({pos, factors, rows, n_rot, freq_base, freq_scale});
    return t;
}

// A check's verdict; a runtime error on the way (an allocation, a copy) counts as a failure,
// since the f32 tiles still work.
std::string HipBackend::checked(std::string (*check_fn)(hipStream_t)) {
    try {
        return check_fn(stream_);
    } catch (const std::exception& e) {
        (void)hipGetLastError();  // a failed launch's error, not the next call's
        return e.what();
    }
}

// Where the device's compilation has a matrix-unit kernel, it must agree with the f32 tiles on
// a small product first; DeviceInfo's notes say which prefill the device got.
bool HipBackend::mma_prefill_passes() {
    const int kind = mma_kind(info_.index);
    std::string note;
    bool ok = false;
    if (kind == 0) {
        note = "prefill without matrix units (none in this device's compilation)";
    } else if (const std::string why = checked(mma_prefill_check); !why.empty()) {
        note = std::string("prefill without matrix units (f32 tiles instead): ") +
               mma_kind_name(kind) + " failed its check: " + why;
        std::fprintf(stderr, "hip backend: %s\n", note.c_str());
    } else {
        note = std::string("prefill on ") + mma_kind_name(kind);
        ok = true;
    }
    info_.notes += (info_.notes.empty() ? "" : "; ") + note;
    return ok;
}

// Prefill and decode attention on the same units (f16 caches, head_dim 64 / 128) checked the
// same way, against the f32 flash tiles and the split decode kernel.
bool HipBackend::mma_attention_passes() {
    const std::string why = checked(mma_attention_check);
    if (why.empty()) {
        info_.notes += "; attention on them too";
        return true;
    }
    const std::string note =
        "attention without matrix units (f32 kernels instead): failed its check: " + why;
    std::fprintf(stderr, "hip backend: %s\n", note.c_str());
    info_.notes += "; " + note;
    return false;
}

// The profile table's row for a node: the op, and for matmuls the weight type and path.
std::string HipBackend::profile_key(const Graph& g, const Node& n, bool decode) const {
    std::string key = std::string(decode ? "decode " : "prefill ") + op_name(n.op);
    if (n.op == Op::MatMul) {
        const int64_t t = g.tensor(n.src[1]).rows();
        key += " " + std::string(dtype_name(weight_of(g, n.src[0]).desc.type)) +
               (t <= kMatvecMaxTokens                         ? " matvec"
                : mma_takes(weight_of(g, n.src[0]).desc.type) ? " mma"
                                                              : " tiled");
    }
    return key;
}

void HipBackend::run_node(const Graph& g, const Node& n) {
    auto f32 = [&](TensorId id) { return reinterpret_cast<float*>(data_of(g, id)); };
    auto opt_f32 = [&](TensorId id) -> const float* { return id == kNoTensor ? nullptr : f32(id); };
    const GraphTensor& out = g.tensor(n.out);
    float* y = f32(n.out);
    const int64_t ne = out.n_elements();
    switch (n.op) {
        case Op::Add:
        case Op::Mul:
            launch_binary(n.op == Op::Mul, f32(n.src[0]), f32(n.src[1]), ne, y, stream_);
            break;
        case Op::Scale:
            launch_scale(f32(n.src[0]), n.f[0], ne, y, stream_);
            break;
        case Op::Softcap:
            launch_softcap(f32(n.src[0]), n.f[0], ne, y, stream_);
            break;
        case Op::GatedAct:
            // The down projection's input: its q8 activations come out of the same kernel.
            if (q8_for_next_matmul(g, n) &&
                launch_gated_q8(n.i[0], f32(n.src[0]), f32(n.src[1]), out.cols(), out.rows(), y,
                                q8_scratch_.data(), stream_)) {
                set_q8_src(y, out.rows(), out.cols());
                break;
            }
            launch_gated(n.i[0], f32(n.src[0]), f32(n.src[1]), ne, y, stream_);
            break;
        case Op::RmsNorm: {
            const int64_t group = n.i[0] > 0 ? n.i[0] : out.cols();
            if (group == out.cols() && q8_for_next_matmul(g, n)) {
                // The norm also leaves its output's q8 activations for the matmuls after it.
                if (launch_rms_norm_q8(f32(n.src[0]), opt_f32(n.src[1]), out.cols(), out.rows(),
                                       n.f[0], y, q8_scratch_.data(), stream_)) {
                    set_q8_src(y, out.rows(), out.cols());
                    break;
                }
            }
            launch_rms_norm(f32(n.src[0]), opt_f32(n.src[1]), group, ne / group, n.f[0], y,
                            stream_);
            break;
        }
        case Op::GetRows: {
            const Weight& w = weight_of(g, n.src[0]);
            launch_get_rows(w.kind, w.dev, w.desc.ne[0], w.desc.ne[1],
                            reinterpret_cast<const int32_t*>(data_of(g, n.src[1])), out.rows(), y,
                            stream_);
            break;
        }
        case Op::MatMul: {
            const Weight& w = weight_of(g, n.src[0]);
            const float* x = f32(n.src[1]);
            const int64_t rows = g.tensor(n.src[1]).rows(), n_in = w.desc.ne[0];
            if (q8_enabled_ && q8_scratch_.size() >= q8_act_bytes(n_in, rows) &&
                q8_matvec_supported(w.kind, n_in, w.desc.ne[1], rows)) {
                quantise_input(x, rows, n_in);
                if (launch_matvec_q8(w.kind, w.dev, n_in, w.desc.ne[1], q8_in(), rows,
                                     opt_f32(n.src[2]), y, stream_, q8_norm())) {
                    // An output over the input would make the quantised copy stale.
                    if (y < x + rows * n_in && x < y + ne) q8_src_ = nullptr;
                    break;
                }
            }
            if (pending_.y == x) materialise_norm();  // the f32 kernel reads the norm's output
            const uint16_t* x16 = takes_x16(rows, w.desc.type) ? f16_input(x, rows, n_in) : nullptr;
            launch_mat_mul(w.kind, w.dev, w.desc.ne[0], w.desc.ne[1], f32(n.src[1]),
                           g.tensor(n.src[1]).rows(), opt_f32(n.src[2]), y, stream_, mma_prefill_,
                           reinterpret_cast<float*>(split_scratch_.data()),
                           split_scratch_.size() / sizeof(float),
                           MmaInputs{x16, mma_f32_decode_, mma_wide_});
            // An output over the input would make the f16 copy stale.
            if (y < x + rows * n_in && x < y + ne) x16_src_ = nullptr;
            break;
        }
        case Op::Rope:
            launch_rope(f32(n.src[0]), reinterpret_cast<const int32_t*>(data_of(g, n.src[1])),
                        out.rows(), out.cols(), n.i[0], n.i[1],
                        static_cast<RopeMode>(n.i[2]) == RopeMode::Neox, n.f[0], n.f[1],
                        opt_f32(n.src[2]), y, stream_);
            break;
        case Op::KvStore: {
            const GraphTensor& cache = g.tensor(n.src[1]);
            const GraphTensor& src = g.tensor(n.src[0]);
            launch_kv_store(f32(n.src[0]), src.rows(), src.cols(), cache.type == DType::F16,
                            data_of(g, n.src[1]), n_past_dev(), stream_);
            break;
        }
        case Op::Attention: {
            const GraphTensor& kc = g.tensor(n.src[1]);
            // The split path's combine also leaves the q8 activations of the output projection.
            const bool q8 = q8_for_next_matmul(g, n);
            if (launch_attention(f32(n.src[0]), out.rows(), n_past_dev(), n.i[0], n.i[1], n.i[2],
                                 n.i[3], n.f[0], n.f[1], data_of(g, n.src[1]), data_of(g, n.src[2]),
                                 kc.type == DType::F16,
                                 reinterpret_cast<float*>(attn_scratch_.data()),
                                 attn_scratch_.size() / sizeof(float), y, stream_,
                                 q8 ? q8_scratch_.data() : nullptr, mma_attention_))
                set_q8_src(y, out.rows(), out.cols());
            break;
        }
        case Op::MoeRoute:
            launch_moe_route(f32(n.src[0]), out.rows(), g.tensor(n.src[0]).cols(), n.i[0],
                             n.i[1] != 0, y, stream_);
            break;
        case Op::MoeFfn: {
            const Weight &gw = weight_of(g, n.src[2]), &uw = weight_of(g, n.src[3]),
                         &dw = weight_of(g, n.src[4]);
            MoeFfnArgs a;
            a.x = f32(n.src[0]);
            a.route = f32(n.src[1]);
            a.gate = gw.dev;
            a.up = uw.dev;
            a.down = dw.dev;
            a.gate_type = gw.kind;
            a.up_type = uw.kind;
            a.down_type = dw.kind;
            a.n_tok = out.rows();
            a.n_embd = gw.desc.ne[0];
            a.n_ff = gw.desc.ne[1];
            a.n_local = gw.desc.ne[2];
            a.k = static_cast<int>(g.tensor(n.src[1]).cols() / 2);
            a.first_expert = n.i[0];
            a.act = n.i[1];
            a.scratch = reinterpret_cast<float*>(moe_scratch_.data());
            a.scratch_floats = moe_scratch_.size() / sizeof(float);
            a.out = y;
            a.q8 = moe_q8_;
            a.mma = mma_prefill_ && moe_mma_;
            launch_moe_ffn(a, stream_);
            break;
        }
        case Op::AllReduce:
        case Op::AllGather:
            if (multi_rank()) {
                host_collective(g, n);
                break;
            }
            [[fallthrough]];
        case Op::Copy:
            if (y != f32(n.src[0]))
                check(hipMemcpyAsync(y, f32(n.src[0]), sizeof(float) * size_t(ne),
                                     hipMemcpyDeviceToDevice, stream_),
                      "copying activations");
            break;
        case Op::TakeRows:
            check(hipMemcpyAsync(y, f32(n.src[0]) + int64_t(n.i[0]) * out.cols(),
                                 sizeof(float) * size_t(ne), hipMemcpyDeviceToDevice, stream_),
                  "copying rows");
            break;
        default:
            break;  // rejected in compute()
    }
}

}  // namespace

std::unique_ptr<Backend> make_hip_backend(DeviceInfo info) {
    return std::make_unique<HipBackend>(std::move(info));
}

}  // namespace tandem::hip
