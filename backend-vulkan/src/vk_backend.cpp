#include "vk_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "tandem/backend/collective.h"
#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "vk_repack.h"

namespace tandem::vk {
namespace {

// Nodes per queued piece of a step (see submit_partial): the first piece small, so the GPU starts
// while the rest is recorded; later ones large (a vkQueueSubmit costs tens of microseconds).
constexpr uint32_t kFirstPieceNodes = 16, kPieceNodes = 96;

bool supported_weight_type(DType t) {
    switch (t) {
        case DType::F32:
        case DType::F16:
        case DType::BF16:
        case DType::Q4_0:
        case DType::Q4_1:
        case DType::Q5_0:
        case DType::Q5_1:
        case DType::Q8_0:
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
            return true;
        default:
            return false;
    }
}

uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

}  // namespace

VulkanBackend::VulkanBackend(const PhysicalDevice& pd) : info_(pd.info), pd_(pd) {
    read_tuning_env();
    // Weights in place on integrated GPUs (not on CPU drivers, where copying costs nothing
    // either way), kept there where they read about as fast as device memory (the probe, "auto");
    // TANDEM_VK_IMPORT=1 imports without the probe, 0 copies, auto probes.
    const char* imp = std::getenv("TANDEM_VK_IMPORT");
    const std::string import_mode = imp && *imp                               ? imp
                                    : info_.type == DeviceType::IntegratedGpu ? "auto"
                                                                              : "0";
    import_weights_ = import_mode != "0";
    placement_probe_ = import_mode == "auto";
    // Discrete GPUs copy weights anyway, so they may as well get the 16-byte aligned layout.
    repack_weights_ = info_.type == DeviceType::DiscreteGpu;
    if (const char* rp = std::getenv("TANDEM_VK_REPACK")) repack_weights_ = std::string(rp) == "1";
    // The q8 quantiser reduces over 8 consecutive lanes with subgroup shuffles.
    q8_ = pd.shader_int8_dot && clusters_of_8(pd);
    if (const char* q = std::getenv("TANDEM_VK_Q8")) q8_ = q8_ && std::string(q) != "0";
    if (const char* m = std::getenv("TANDEM_VK_MOE_Q8")) moe_q8_ = std::string(m) != "0";
    if (const char* m = std::getenv("TANDEM_VK_MATMUL_SPLIT"))
        matmul_split_ = std::string(m) != "0";
    if (const char* m = std::getenv("TANDEM_VK_SPLIT_WORKGROUPS"); m && std::atoi(m) > 0)
        split_workgroups_ = std::atoi(m);
    if (const char* m = std::getenv("TANDEM_VK_MOE_COOPMAT")) moe_coopmat_ = std::string(m) != "0";
    ctx_ = std::make_unique<Context>(pd);
    pipelines_ = std::make_unique<Pipelines>(ctx_->device(), ctx_->pipeline_stats());
    // The cooperative-matrix kernels lay their tiles out over subgroups of 32.
    if (pd.coopmat_f16 && pd.subgroup_size_control)
        for (const char* shader : {"matmul_coopmat", "attention_flash_coopmat"})
            pipelines_->require_subgroup_size(shader, 32, pd.full_subgroups);
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = ctx_->command_pool();
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(ctx_->device(), &cai, &cb_), "vkAllocateCommandBuffers");
    cbs_.push_back(cb_);
    if (const char* sp = std::getenv("TANDEM_VK_SPLIT")) split_submit_ = std::string(sp) != "0";
    if (const char* c = std::getenv("TANDEM_VK_CACHE")) cache_steps_ = std::string(c) != "0";
    if (const char* f = std::getenv("TANDEM_VK_FUSE")) fuse_ = std::string(f) != "0";
    if (const char* c = std::getenv("TANDEM_VK_IO_CACHED")) io_cached_ = std::string(c) != "0";
    if (const char* k = std::getenv("TANDEM_VK_SPLITK"); k && *k)
        splitk_force_ = std::max(0, std::atoi(k));
    if (const char* m = std::getenv("TANDEM_VK_ATTN_MERGE"))
        merge_attention_ = std::string(m) != "0";
    if (const char* prof = std::getenv("TANDEM_VK_PROFILE"); prof && std::string(prof) == "1") {
        if (pd.timestamp_period_ns > 0)
            profiler_ = std::make_unique<Profiler>(ctx_->device(), pd.timestamp_period_ns);
        else
            std::fprintf(stderr,
                         "vulkan: TANDEM_VK_PROFILE: the compute queue has no timestamps\n");
    }
}

VulkanBackend::~VulkanBackend() {
    vkDeviceWaitIdle(ctx_->device());
    if (profiler_) {
        profiler_->print(stderr);
        profiler_.reset();
    }
    for (auto& w : weights_) ctx_->destroy(w.buf);
    for (auto& k : kv_) ctx_->destroy(k);
    ctx_->destroy(scratch_);
    ctx_->destroy(io_);
    ctx_->destroy(moe_h_);
    ctx_->destroy(collective_buf_);
    ctx_->destroy(attn_part_);
    ctx_->destroy(q8_buf_);
    ctx_->destroy(split_buf_);
    ctx_->destroy(x16_buf_);
    pipelines_.reset();
}

// Padded: the matmul kernels read whole 32-bit words, up to 4 bytes past the end of a 2-byte
// aligned block.
Buffer VulkanBackend::create_weight_buffer(const WeightDesc& w) {
    return ctx_->create_device_buffer(align_up(w.nbytes + 4, 4), "weight '" + w.name + "'");
}

void VulkanBackend::upload_weight(int slot, const WeightDesc& w, bool keep_host) {
    ++weight_uploads_;  // a rope factors weight may change: the rope tables are placed again
    if (slot < 0) throw Error("vulkan backend: negative weight slot for '" + w.name + "'");
    if (!supported_weight_type(w.type))
        throw Error("vulkan backend: weight '" + w.name + "' has type " +
                    std::string(dtype_name(w.type)) + ", which has no Vulkan kernel yet");
    const uint64_t rows = static_cast<uint64_t>(w.ne[1] * w.ne[2]);
    const uint64_t want = row_bytes(w.type, static_cast<uint64_t>(w.ne[0])) * rows;
    if (w.nbytes != want)
        throw Error("vulkan backend: weight '" + w.name + "' has " + std::to_string(w.nbytes) +
                    " bytes, its type and shape need " + std::to_string(want));
    // Shaders index weights with 32-bit byte offsets.
    if (w.nbytes >= (1ull << 32))
        throw Error("vulkan backend: weight '" + w.name + "' is " + std::to_string(w.nbytes) +
                    " bytes; tensors of 4 GiB or more are not supported yet");
    if (static_cast<size_t>(slot) >= weights_.size()) weights_.resize(slot + 1);
    ++generation_;
    Weight& dst = weights_[slot];
    if (dst.buf.buffer) {
        weight_bytes_ -= dst.buf.allocated;
        ctx_->destroy(dst.buf);
    }
    dst.desc = w;
    dst.desc.data = nullptr;
    dst.host = nullptr;
    std::string why;
    dst.repacked = repack_weights_ && repackable(w);
    // Weights in place must keep the 16-byte alignment dq_group's K-quant loads need (GGUF
    // aligns tensor data to 32 bytes by default); else they are copied.
    const bool aligned = reinterpret_cast<uintptr_t>(w.data) % 16 == 0;
    if (!dst.repacked && keep_host && import_weights_ && aligned &&
        ctx_->import_host(w.data, w.nbytes, dst.buf, &why)) {
        ++weights_imported_;
        dst.host = w.data;
    } else {
        dst.buf = create_weight_buffer(w);
        if (dst.repacked) {  // in pieces of about 64 MiB of rows
            const uint64_t rb = row_bytes(w.type, uint64_t(w.ne[0]));
            const uint64_t step = std::max<uint64_t>(1, (64ull << 20) / rb);
            std::vector<uint8_t> piece(std::min(rows, step) * rb);
            for (uint64_t r = 0; r < rows; r += step) {
                const uint64_t n = std::min(step, rows - r);
                repack_rows(w, r, n, piece.data());
                ctx_->upload(dst.buf, r * rb, piece.data(), n * rb);
            }
        } else {
            ctx_->upload(dst.buf, 0, w.data, w.nbytes);
        }
        ++weights_copied_;
        if (!why.empty()) import_refused_ = why;
    }
    dst.host_f32.clear();
    if (w.type == DType::F32 && w.ne[1] * w.ne[2] == 1 && w.ne[0] <= 65536) {
        const auto* f = static_cast<const float*>(w.data);
        dst.host_f32.assign(f, f + w.ne[0]);
    }
    weight_bytes_ += dst.buf.allocated;
}

void VulkanBackend::allocate_kv(const std::vector<KvDesc>& kv) {
    vkDeviceWaitIdle(ctx_->device());
    if (weights_imported_ > 0) settle_weight_placement();  // all weights are in by now
    if (weights_imported_ + weights_copied_ > 0) {         // say how
        std::string how;
        if (weights_imported_)
            how = std::to_string(weights_imported_) +
                  " weights used in place (VK_EXT_external_memory_host import)" +
                  (weights_copied_ ? ", " + std::to_string(weights_copied_) + " copied" : "");
        else
            how = std::to_string(weights_copied_) + " weights copied" +
                  (info_.unified_memory ? " into host-visible device memory"
                                        : " through a 64 MiB staging buffer");
        if (!import_refused_.empty()) how += " (import refused: " + import_refused_ + ")";
        if (const std::string held = ctx_->heap_use(); !held.empty()) how += "; held: " + held;
        log_info("vulkan: " + how);
        weights_imported_ = weights_copied_ = 0;
    }
    for (auto& k : kv_) ctx_->destroy(k);
    kv_.clear();
    ++generation_;
    kv_desc_ = kv;
    kv_bytes_ = 0;
    for (size_t i = 0; i < kv.size(); ++i) {
        const KvDesc& d = kv[i];
        if (d.type != DType::F16 && d.type != DType::F32)
            throw Error("vulkan backend: KV cache type " + std::string(dtype_name(d.type)) +
                        " is not supported (f16 or f32)");
        if (d.type == DType::F16 && d.width % 2 != 0)
            throw Error("vulkan backend: f16 KV cache rows need an even width, got " +
                        std::to_string(d.width));
        const uint64_t n = row_bytes(d.type, static_cast<uint64_t>(d.width)) * uint64_t(d.n_ctx);
        kv_.push_back(ctx_->create_device_buffer(n, "KV cache " + std::to_string(i)));
        ctx_->fill_zero(kv_.back());
        kv_bytes_ += kv_.back().allocated;
    }
}

bool VulkanBackend::grow_device_buffer(Buffer& b, uint64_t bytes, const char* what) {
    if (bytes <= b.size) return false;
    vkDeviceWaitIdle(ctx_->device());
    ctx_->destroy(b);
    ++generation_;
    b = ctx_->create_device_buffer(bytes, what);
    return true;
}

void VulkanBackend::reserve_scratch(uint64_t bytes) {
    grow_device_buffer(scratch_, bytes, "scratch");
}

void VulkanBackend::ensure_moe_buffer(const Graph& g) {
    uint64_t bytes = 0;
    for (const Node& n : g.nodes()) {
        if (n.op != Op::MoeFfn) continue;
        // The element-wise shaders: the hidden rows [T * k, n_ff].
        const int64_t slots = g.tensor(n.out).rows() * (g.tensor(n.src[1]).cols() / 2);
        const auto l = moe_q8_layout(g, n);
        bytes = std::max(bytes, l ? l->end : uint64_t(slots * g.tensor(n.src[2]).ne[1]) * 4);
    }
    grow_device_buffer(moe_h_, bytes, "MoE expert activations");
}

const WeightDesc& VulkanBackend::weight_desc(const Graph& g, TensorId id) const {
    const GraphTensor& t = g.tensor(id);
    const auto slot = static_cast<size_t>(t.slot);
    if (t.role != TensorRole::Weight || t.slot < 0 || slot >= weights_.size() ||
        !weights_[slot].buf.buffer)
        throw Error("vulkan backend: weight '" + t.name + "' was never uploaded");
    const WeightDesc& d = weights_[slot].desc;
    if (d.type != t.type || d.ne != t.ne)
        throw Error("vulkan backend: weight '" + t.name + "' uploaded with another type or shape");
    return d;
}

uint32_t VulkanBackend::shader_type(const Graph& g, TensorId id) const {
    const WeightDesc& d = weight_desc(g, id);
    return weights_[static_cast<size_t>(g.tensor(id).slot)].repacked ? repacked_type_id(d.type)
                                                                     : uint32_t(d.type);
}

VulkanBackend::Ref VulkanBackend::ref(const Graph& g, TensorId id) const {
    if (id == kNoTensor) return {};
    const GraphTensor& t = g.tensor(id);
    const auto slot = static_cast<size_t>(t.slot);
    switch (t.role) {
        case TensorRole::Weight: {
            weight_desc(g, id);
            const Buffer& b = weights_[slot].buf;
            return {kWeightId0 + t.slot, b.address, 0, b.size};
        }
        case TensorRole::KvCache:
            if (t.slot < 0 || slot >= kv_.size())
                throw Error("vulkan backend: KV tensor '" + t.name + "' was never allocated");
            return {kKvId0 + t.slot, kv_[slot].address, 0, kv_[slot].size};
        case TensorRole::Input:
            return {kIoId, io_.address + input_offset_.at(slot), input_offset_.at(slot),
                    t.nbytes()};
        case TensorRole::Output:
            return {kIoId, io_.address + output_offset_.at(slot), output_offset_.at(slot),
                    t.nbytes()};
        case TensorRole::Activation:
            return {kScratchId, scratch_.address + t.offset, t.offset, t.nbytes()};
    }
    return {};
}

// Inputs and outputs of the step share one host-visible buffer; it grows to the largest step.
void VulkanBackend::layout_io(const Graph& g, const StepIO& io) {
    input_offset_.assign(io.inputs.size(), 0);
    output_offset_.assign(io.outputs.size(), 0);
    uint64_t at = kStepParamsBytes;
    for (const GraphTensor& t : g.tensors()) {
        if (t.role != TensorRole::Input && t.role != TensorRole::Output) continue;
        const bool in = t.role == TensorRole::Input;
        const size_t n = in ? io.inputs.size() : io.outputs.size();
        if (t.slot < 0 || static_cast<size_t>(t.slot) >= n ||
            (in ? io.inputs[t.slot] == nullptr : io.outputs[t.slot] == nullptr))
            throw Error(std::string("vulkan backend: step ") + (in ? "input" : "output") + " '" +
                        t.name + "' not given");
        (in ? input_offset_ : output_offset_)[t.slot] = at;
        at = align_up(at + t.nbytes(), kIoAlign);
    }
    at = place_rope_tables(g, at);
    if (at > io_.size) {
        ctx_->destroy(io_);
        ++generation_;
        io_ = ctx_->create_host_buffer(std::max<uint64_t>(at, 1 << 20), "step inputs/outputs",
                                       io_cached_);
    }
    StepParams sp{};
    sp.n_past = static_cast<uint32_t>(io.n_past);
    std::memcpy(io_.mapped, &sp, sizeof sp);
    for (const GraphTensor& t : g.tensors())
        if (t.role == TensorRole::Input)
            std::memcpy(static_cast<uint8_t*>(io_.mapped) + input_offset_[t.slot],
                        io.inputs[t.slot], t.nbytes());
    fill_rope_tables(io);
}

// cos/sin of every (position, frequency) of a Rope node whose positions are a host input,
// computed in double as the CPU backend does: float angles of positions in the thousands lose
// ~1e-4 and GPU sin/cos lose more. Nodes with the same positions and parameters (every layer)
// share one table: the frequency factors by their weight slot, since a graph may name the one
// weight in a tensor of each layer (Llama 3.x's rope_freqs: 32 tables of 256 KB at 512 tokens
// were 3.3 ms of host time before each 8B prefill step's submit). Placed once per graph
// (rope_key_); only the cos / sin are new each step.
uint64_t VulkanBackend::place_rope_tables(const Graph& g, uint64_t at) {
    const RopePlanKey key{g.fingerprint(), g.nodes().data(), at, weight_uploads_};
    if (key == rope_key_) return rope_end_;
    rope_table_.clear();
    rope_fills_.clear();
    std::map<std::tuple<int32_t, float, float, TensorId, int>, uint64_t> placed;
    for (const Node& n : g.nodes()) {
        if (n.op != Op::Rope || g.tensor(n.src[1]).role != TensorRole::Input) continue;
        const float* factors = nullptr;
        if (n.src[2] != kNoTensor) {
            const GraphTensor& ft = g.tensor(n.src[2]);
            if (ft.role != TensorRole::Weight || ft.slot < 0 ||
                static_cast<size_t>(ft.slot) >= weights_.size() ||
                weights_[ft.slot].host_f32.empty())
                continue;  // the shader computes the angles itself
            factors = weights_[ft.slot].host_f32.data();
        }
        const int factors_slot = factors ? g.tensor(n.src[2]).slot : -1;
        const auto tkey = std::make_tuple(n.i[1], n.f[0], n.f[1], n.src[1], factors_slot);
        if (auto it = placed.find(tkey); it != placed.end()) {
            rope_table_[&n] = it->second;
            continue;
        }
        const int64_t T = g.tensor(n.out).rows(), half = n.i[1] / 2, n_rot = n.i[1];
        placed[tkey] = at;
        rope_table_[&n] = at;
        RopeFill f{at,
                   T,
                   g.tensor(n.src[1]).slot,
                   double(n.f[1]),
                   std::vector<double>(half),
                   std::vector<double>(half),
                   std::vector<double>(half)};
        for (int64_t i = 0; i < half; ++i) {
            f.inv[i] = std::pow(double(n.f[0]), -2.0 * double(i) / double(n_rot));
            if (factors) f.inv[i] /= factors[i];
            f.step_cos[i] = std::cos(f.scale * f.inv[i]);
            f.step_sin[i] = std::sin(f.scale * f.inv[i]);
        }
        rope_fills_.push_back(std::move(f));
        at = align_up(at + uint64_t(T * half * 2) * sizeof(float), kIoAlign);
    }
    rope_key_ = key;
    rope_end_ = at;
    return at;
}

// A position one past the one before (in this step or at the end of the last) takes its cos /
// sin from that one's by the angle addition (in double: ~1e-16 a step; libm again after
// kRopeAnchor steps), the others from libm. libm's double cos / sin cost ~0.4 us a call on the
// lent H200's host: a 512-token prefill step's 65536 calls took 25-32 ms before every submit,
// a quarter of the step's GPU time, and a decode step's 128 calls ~50 us.
constexpr int64_t kRopeAnchor = 64;

void VulkanBackend::fill_rope_tables(const StepIO& io) {
    for (RopeFill& f : rope_fills_) {
        const auto* pos = static_cast<const int32_t*>(io.inputs.at(f.pos_slot));
        auto* tab = reinterpret_cast<float*>(static_cast<uint8_t*>(io_.mapped) + f.off);
        const auto half = static_cast<int64_t>(f.inv.size());
        std::vector<double>&c = f.cos_last, &s = f.sin_last;
        c.resize(size_t(half));
        s.resize(size_t(half));
        for (int64_t t = 0; t < f.T; ++t) {
            const int64_t prev = t > 0 ? int64_t(pos[t - 1]) : f.last_pos;
            const bool next = prev >= 0 && int64_t(pos[t]) == prev + 1 && f.stepped < kRopeAnchor;
            f.stepped = next ? f.stepped + 1 : 0;
            for (int64_t i = 0; i < half; ++i) {
                if (next) {
                    const double cn = c[i] * f.step_cos[i] - s[i] * f.step_sin[i];
                    s[i] = s[i] * f.step_cos[i] + c[i] * f.step_sin[i];
                    c[i] = cn;
                } else {
                    const double a = double(pos[t]) * f.scale * f.inv[i];
                    c[i] = std::cos(a);
                    s[i] = std::sin(a);
                }
                tab[(t * half + i) * 2] = static_cast<float>(c[i]);
                tab[(t * half + i) * 2 + 1] = static_cast<float>(s[i]);
            }
        }
        if (f.T > 0) f.last_pos = pos[f.T - 1];
    }
}

void VulkanBackend::compute(const Graph& g, const StepIO& io) {
    if (g.scratch_bytes() > scratch_.size)
        throw Error("vulkan backend: graph needs " + std::to_string(g.scratch_bytes()) +
                    " scratch bytes, " + std::to_string(scratch_.size) + " reserved");
    const auto t0 = std::chrono::steady_clock::now();
    auto cpu_time = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    check_step_inputs(g, io);  // every step, recorded or replayed, before anything is queued
    const double io_t0 = cpu_time();
    layout_io(g, io);  // may move the io buffer (generation_), so before the cache look-up
    const double io_s = cpu_time() - io_t0;
    auto one_token = [&] {  // a decode step, for the profile's host-time rows
        return std::none_of(g.tensors().begin(), g.tensors().end(), [](const GraphTensor& t) {
            return t.role == TensorRole::Input && t.n_elements() > 1;
        });
    };
    const bool cache = cache_steps_ && cacheable(g);
    const uint64_t key = cache ? g.fingerprint() : 0;
    if (CachedStep* c = cache ? find_cached(key) : nullptr) {
        c->last_used = ++use_clock_;
        if (profiler_) {
            profiler_->replay(c->profile_labels);
            profiler_->add_record_time(cpu_time(), io_s, true, one_token());
        }
        ctx_->submit_and_wait(c->cbs.data(), static_cast<uint32_t>(c->cbs.size()));
        if (profiler_) profiler_->collect();
        copy_outputs(g, io);
        return;
    }
    ensure_attention_partials(g);
    ensure_q8_buffer(g);
    ensure_moe_buffer(g);
    ensure_split_buffer(g);
    ensure_x16_buffer(g);
    CachedStep* rec = cache ? new_cached(key) : nullptr;
    pool_ = rec ? &rec->cbs : &cbs_;
    barriers_ = 0;
    begin_recording();
    try {
        const size_t n_nodes = g.nodes().size();
        q8_src_ = 0;
        x16_src_ = 0;
        q8_alt_ = false;
        pending_norm_ = PendingNorm{};
        done_.assign(n_nodes, false);
        uses_ = tensor_uses(g);
        for (size_t i = 0; i < n_nodes; ++i) {
            if (done_[i]) continue;  // recorded with an earlier node (q + k's ropes)
            const Node& n = g.nodes()[i];
            if (pending_norm_.id != kNoTensor && i > pending_norm_.last) {  // read no more
                if (q8_src_ == pending_norm_.y.address) q8_src_ = 0;
                pending_norm_ = PendingNorm{};
            }
            if (n.op != Op::MatMul) {
                q8_src_ = 0;   // it may write what q8_buf_ was quantised from
                x16_src_ = 0;  // or what x16_buf_ was made from
                if (pending_norm_.id != kNoTensor &&
                    std::find(n.src.begin(), n.src.end(), pending_norm_.id) != n.src.end())
                    materialise_norm();
            }
            if (const size_t folded = try_fuse_resid_norm(g, i); folded > 0) {
                if (profiler_) profiler_->mark(cb_, node_label(g, n) + "+add+rms_norm");
                i += folded - 1;
            } else if (try_fuse_add_norm(g, i)) {
                ++i;
                if (profiler_) profiler_->mark(cb_, "add+rms_norm");
            } else if (const size_t fused = try_fuse_matvecs(g, i); fused > 1) {
                if (profiler_)
                    profiler_->mark(cb_, node_label(g, n) + " x" + std::to_string(fused));
                i += fused - 1;
            } else if (try_fuse_qk_norm_rope(g, i)) {
                i += 5;
                if (profiler_) profiler_->mark(cb_, "qk_norm+rope+kv_store");
            } else if (try_fuse_rope_store(g, i)) {
                ++i;
                if (profiler_) profiler_->mark(cb_, "rope+kv_store");
            } else if (try_q8_producer(g, i)) {
                if (profiler_) profiler_->mark(cb_, node_label(g, n) + "+q8");
            } else {
                record_node(g, n);
                if (profiler_) profiler_->mark(cb_, node_label(g, n));
            }
            // A first small piece gets the GPU going; later pieces amortise the submit cost.
            ++nodes_in_cb_;
            const uint32_t piece = cb_next_ == 1 ? kFirstPieceNodes : kPieceNodes;
            if (split_submit_ && !profiler_ && nodes_in_cb_ >= piece && i + 1 < n_nodes)
                submit_partial();
        }
    } catch (...) {
        if (recording_) vkEndCommandBuffer(cb_);
        recording_ = false;
        if (cb_next_ > 1) vkQueueWaitIdle(ctx_->queue());  // pieces already queued
        cb_next_ = 0;
        pool_ = &cbs_;
        if (rec) drop_cached(rec);
        throw;
    }
    if (profiler_) profiler_->add_record_time(cpu_time(), io_s, false, one_token());
    finish_and_wait();
    pool_ = &cbs_;
    if (rec) {
        // A buffer that moved while recording (it cannot in practice: sizes are known up
        // front) leaves commands that must not be replayed.
        if (rec->generation != generation_) {
            drop_cached(rec);
        } else if (profiler_) {
            rec->profile_labels = profiler_->labels();
        }
    }
    copy_outputs(g, io);
}

void VulkanBackend::copy_outputs(const Graph& g, const StepIO& io) {
    for (const GraphTensor& t : g.tensors())
        if (t.role == TensorRole::Output)
            std::memcpy(io.outputs[t.slot],
                        static_cast<const uint8_t*>(io_.mapped) + output_offset_[t.slot],
                        t.nbytes());
}

// Steps with a host collective wait and continue in the middle: recorded every time.
bool VulkanBackend::cacheable(const Graph& g) const {
    if (!collective_ || collective_->n_ranks() <= 1) return true;
    return std::none_of(g.nodes().begin(), g.nodes().end(), [](const Node& n) {
        return n.op == Op::AllReduce || n.op == Op::AllGather;
    });
}

VulkanBackend::CachedStep* VulkanBackend::find_cached(uint64_t key) {
    for (auto& c : cached_) {
        if (c->key != key) continue;
        if (c->generation == generation_) return c.get();
        drop_cached(c.get());  // recorded against buffers that moved since
        return nullptr;
    }
    return nullptr;
}

// Room for the graphs an engine alternates between (decode, prefill batch, its tail, ...).
constexpr size_t kMaxCachedSteps = 8;

VulkanBackend::CachedStep* VulkanBackend::new_cached(uint64_t key) {
    if (cached_.size() >= kMaxCachedSteps) {
        auto lru = std::min_element(
            cached_.begin(), cached_.end(),
            [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
        drop_cached(lru->get());
    }
    auto c = std::make_unique<CachedStep>();
    c->key = key;
    c->generation = generation_;
    c->last_used = ++use_clock_;
    cached_.push_back(std::move(c));
    return cached_.back().get();
}

// Only between steps: every step waits for its fence, so no cached command buffer is pending.
void VulkanBackend::drop_cached(CachedStep* c) {
    auto it =
        std::find_if(cached_.begin(), cached_.end(), [c](const auto& p) { return p.get() == c; });
    if (it == cached_.end()) return;
    if (!c->cbs.empty())
        vkFreeCommandBuffers(ctx_->device(), ctx_->command_pool(),
                             static_cast<uint32_t>(c->cbs.size()), c->cbs.data());
    cached_.erase(it);
}

void VulkanBackend::start_command_buffer() {
    std::vector<VkCommandBuffer>& pool = *pool_;
    if (cb_next_ == pool.size()) {
        VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        cai.commandPool = ctx_->command_pool();
        cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        cai.commandBufferCount = 1;
        VkCommandBuffer cb = VK_NULL_HANDLE;
        check(vkAllocateCommandBuffers(ctx_->device(), &cai, &cb), "vkAllocateCommandBuffers");
        pool.push_back(cb);
    }
    cb_ = pool[cb_next_++];
    check(vkResetCommandBuffer(cb_, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    // Cached steps are submitted again (no ONE_TIME_SUBMIT), never while pending.
    bi.flags = pool_ == &cbs_ ? VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT : 0;
    check(vkBeginCommandBuffer(cb_, &bi), "vkBeginCommandBuffer");
    nodes_in_cb_ = 0;
}

// Queues what is recorded so far and goes on in the next command buffer. The hazard lists carry
// over: a barrier in a later piece also orders the earlier pieces' commands (submission order).
void VulkanBackend::submit_partial() {
    check(vkEndCommandBuffer(cb_), "vkEndCommandBuffer");
    ctx_->submit(cb_);
    start_command_buffer();
}

void VulkanBackend::begin_recording() {
    start_command_buffer();
    recording_ = true;
    pending_reads_.clear();
    pending_writes_.clear();
    if (profiler_) profiler_->begin(cb_);
}

void VulkanBackend::finish_and_wait() {
    // The host reads results (outputs, collective staging) after the fence.
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                         1, &mb, 0, nullptr, 0, nullptr);
    recording_ = false;
    check(vkEndCommandBuffer(cb_), "vkEndCommandBuffer");
    ctx_->submit_and_wait(cb_);  // the fence covers the pieces queued before
    cb_next_ = 0;
    if (profiler_) profiler_->collect();
}

// Tensor parallelism: the collective runs on the host between two submissions of the step
// (the network is the bottleneck there, not the extra round trip).
void VulkanBackend::host_collective(const Graph& g, const Node& n) {
    const GraphTensor& out = g.tensor(n.out);
    const uint64_t n_src = uint64_t(g.tensor(n.src[0]).n_elements());
    const uint64_t n_out = uint64_t(out.n_elements());
    const uint64_t bytes = std::max(n_src, n_out) * sizeof(float);
    if (bytes > collective_buf_.size) {
        finish_and_wait();  // the old buffer may be in use by recorded commands
        ctx_->destroy(collective_buf_);
        collective_buf_ = ctx_->create_host_buffer(bytes, "collective staging", io_cached_);
        begin_recording();
    }
    const Ref stage{kCollectiveId, collective_buf_.address, 0, bytes};
    copy_floats(ref(g, n.src[0]), stage, n_src);
    finish_and_wait();
    auto* h = static_cast<float*>(collective_buf_.mapped);
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
    begin_recording();
    copy_floats(stage, ref(g, n.out), n_out);
}

void VulkanBackend::dispatch(const std::string& shader, const std::vector<uint32_t>& spec,
                             const void* push, uint32_t push_bytes, uint32_t gx, uint32_t gy,
                             uint32_t gz, std::initializer_list<Ref> reads,
                             std::initializer_list<Ref> writes) {
    auto overlaps = [](const Ref& r, const std::vector<Range>& list) {
        return std::any_of(list.begin(), list.end(), [&](const Range& x) {
            return x.buffer == r.buffer && r.offset < x.hi && x.lo < r.offset + r.size;
        });
    };
    // Profile mode: every node after a barrier, so its timestamps time it alone.
    bool need = profiler_ && (!pending_reads_.empty() || !pending_writes_.empty());
    for (const Ref& r : reads) need = need || (r.buffer >= 0 && overlaps(r, pending_writes_));
    for (const Ref& w : writes)
        need = need ||
               (w.buffer >= 0 && (overlaps(w, pending_writes_) || overlaps(w, pending_reads_)));
    if (need) {
        VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        vkCmdPipelineBarrier(cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr, 0,
                             nullptr);
        pending_reads_.clear();
        pending_writes_.clear();
        ++barriers_;
    }
    for (const Ref& r : reads)
        if (r.buffer >= 0 && r.buffer < kWeightId0)
            pending_reads_.push_back({r.buffer, r.offset, r.offset + r.size});
    for (const Ref& w : writes)
        if (w.buffer >= 0) pending_writes_.push_back({w.buffer, w.offset, w.offset + w.size});
    if (gx == 0 || gy == 0 || gz == 0) return;
    vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, pipelines_->get(shader, spec));
    vkCmdPushConstants(cb_, pipelines_->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
    vkCmdDispatch(cb_, gx, gy, gz);
}

}  // namespace tandem::vk
