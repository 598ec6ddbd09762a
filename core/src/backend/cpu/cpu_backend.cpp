// The CPU backend: weights used in place from host memory (the file mapping) when the caller
// keeps it alive, KV cache and scratch in aligned host buffers, graphs run node by node on a
// persistent thread pool. It is the reference every other backend is tested against.
#include <cstring>
#include <memory>

#include "cpu_ops.h"
#include "tandem/backend/backend.h"
#include "tandem/backend/collective.h"
#include "tandem/common/error.h"
#include "tandem/common/sysinfo.h"

namespace tandem {
namespace {

struct AlignedFree {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(64)); }
};
using AlignedBytes = std::unique_ptr<uint8_t[], AlignedFree>;
AlignedBytes aligned_bytes(uint64_t n) {
    auto* p = static_cast<uint8_t*>(::operator new[](n ? n : 1, std::align_val_t(64)));
    return AlignedBytes(p);
}

class CpuBackend final : public Backend {
  public:
    CpuBackend(DeviceInfo info, int threads)
        : info_(std::move(info)), pool_(threads > 0 ? threads : physical_core_count()) {
        ws_.per_thread.resize(static_cast<size_t>(pool_.size()));
    }
    const DeviceInfo& device() const override { return info_; }
    bool can_compute() const override { return true; }

    void upload_weight(int slot, const WeightDesc& w, bool keep_host) override {
        if (slot < 0) throw Error("cpu backend: negative weight slot for '" + w.name + "'");
        if (static_cast<size_t>(slot) >= weights_.size()) weights_.resize(slot + 1);
        Weight& dst = weights_[slot];
        dst.desc = w;
        if (keep_host) {
            dst.owned.reset();
        } else {
            dst.owned = aligned_bytes(w.nbytes);
            std::memcpy(dst.owned.get(), w.data, w.nbytes);
            dst.desc.data = dst.owned.get();
            owned_bytes_ += w.nbytes;
        }
        weight_bytes_ += w.nbytes;
    }

    void allocate_kv(const std::vector<KvDesc>& kv) override {
        kv_.clear();
        kv_bytes_ = 0;
        for (const auto& d : kv) {
            if (d.type != DType::F16 && d.type != DType::F32)
                throw Error("cpu backend: KV cache type " + std::string(dtype_name(d.type)) +
                            " is not supported (f16 or f32)");
            uint64_t n = row_bytes(d.type, static_cast<uint64_t>(d.width)) * uint64_t(d.n_ctx);
            Kv k{d, aligned_bytes(n)};
            std::memset(k.data.get(), 0, n);
            kv_bytes_ += n;
            kv_.push_back(std::move(k));
            // Attention scratch of every thread (scores over the context + two head rows) is
            // sized now: which thread takes which head varies, so growing it lazily would
            // allocate in the middle of decoding.
            for (int t = 0; t < pool_.size(); ++t)
                ws_.thread_buffer(t, static_cast<size_t>(d.n_ctx + 2 * d.width));
        }
    }

    void reserve_scratch(uint64_t bytes) override {
        if (bytes <= scratch_size_) return;
        scratch_ = aligned_bytes(bytes);
        scratch_size_ = bytes;
    }

    void set_collective(Collective* c) override { collective_ = c; }
    uint64_t weight_bytes() const override { return weight_bytes_; }
    uint64_t kv_bytes() const override { return kv_bytes_; }
    uint64_t scratch_bytes() const override { return scratch_size_; }

    void compute(const Graph& g, const StepIO& io) override;

  private:
    struct Weight {
        WeightDesc desc;
        AlignedBytes owned;
    };
    struct Kv {
        KvDesc desc;
        AlignedBytes data;
    };

    uint8_t* data_of(const Graph& g, TensorId id, const StepIO& io) const;
    cpu::WeightRef weight_ref(const Graph& g, TensorId id) const;
    void run_node(const Graph& g, const Node& n, const StepIO& io);

    DeviceInfo info_;
    cpu::ThreadPool pool_;
    cpu::CpuWorkspace ws_;
    std::vector<Weight> weights_;
    std::vector<Kv> kv_;
    AlignedBytes scratch_;
    uint64_t scratch_size_ = 0, weight_bytes_ = 0, owned_bytes_ = 0, kv_bytes_ = 0;
    Collective* collective_ = nullptr;
};

uint8_t* CpuBackend::data_of(const Graph& g, TensorId id, const StepIO& io) const {
    const GraphTensor& t = g.tensor(id);
    const auto slot = static_cast<size_t>(t.slot);
    switch (t.role) {
        case TensorRole::Weight:
            if (t.slot < 0 || slot >= weights_.size() || !weights_[slot].desc.data)
                throw Error("cpu backend: weight '" + t.name + "' was never uploaded");
            return const_cast<uint8_t*>(static_cast<const uint8_t*>(weights_[slot].desc.data));
        case TensorRole::KvCache:
            if (t.slot < 0 || slot >= kv_.size())
                throw Error("cpu backend: KV tensor '" + t.name + "' was never allocated");
            return kv_[slot].data.get();
        case TensorRole::Input:
            if (t.slot < 0 || slot >= io.inputs.size() || !io.inputs[slot])
                throw Error("cpu backend: step input '" + t.name + "' not given");
            return const_cast<uint8_t*>(static_cast<const uint8_t*>(io.inputs[slot]));
        case TensorRole::Output:
            if (t.slot < 0 || slot >= io.outputs.size() || !io.outputs[slot])
                throw Error("cpu backend: step output '" + t.name + "' not given");
            return static_cast<uint8_t*>(io.outputs[slot]);
        case TensorRole::Activation:
            return scratch_.get() + t.offset;
    }
    return nullptr;
}

cpu::WeightRef CpuBackend::weight_ref(const Graph& g, TensorId id) const {
    const GraphTensor& t = g.tensor(id);
    const WeightDesc& d = weights_.at(static_cast<size_t>(t.slot)).desc;
    if (d.type != t.type || d.ne != t.ne)
        throw Error("cpu backend: weight '" + t.name + "' uploaded with another type or shape");
    return {d.type, static_cast<const uint8_t*>(d.data), d.ne[0], d.ne[1], d.ne[2]};
}

void CpuBackend::compute(const Graph& g, const StepIO& io) {
    if (g.scratch_bytes() > scratch_size_)
        throw Error("cpu backend: graph needs " + std::to_string(g.scratch_bytes()) +
                    " scratch bytes, " + std::to_string(scratch_size_) + " reserved");
    check_step_inputs(g, io);  // before any node runs: a refused step changes nothing
    for (const Node& n : g.nodes()) run_node(g, n, io);
}

void CpuBackend::run_node(const Graph& g, const Node& n, const StepIO& io) {
    auto f32 = [&](TensorId id) { return reinterpret_cast<float*>(data_of(g, id, io)); };
    auto opt_f32 = [&](TensorId id) -> const float* { return id == kNoTensor ? nullptr : f32(id); };
    const GraphTensor& out = g.tensor(n.out);
    float* y = f32(n.out);
    switch (n.op) {
        case Op::GetRows:
            cpu::op_get_rows(pool_, weight_ref(g, n.src[0]),
                             reinterpret_cast<const int32_t*>(data_of(g, n.src[1], io)), out.rows(),
                             y);
            break;
        case Op::RmsNorm: {
            const int64_t group = n.i[0] > 0 ? n.i[0] : out.cols();
            cpu::op_rms_norm(pool_, f32(n.src[0]), opt_f32(n.src[1]), group,
                             out.n_elements() / group, n.f[0], y);
            break;
        }
        case Op::MatMul:
            cpu::op_mat_mul(pool_, ws_, weight_ref(g, n.src[0]), f32(n.src[1]),
                            g.tensor(n.src[1]).rows(), opt_f32(n.src[2]), y);
            break;
        case Op::Add:
        case Op::Mul:
            cpu::op_binary(pool_, n.op, f32(n.src[0]), f32(n.src[1]), out.n_elements(), y);
            break;
        case Op::Scale:
            cpu::op_scale(pool_, f32(n.src[0]), n.f[0], out.n_elements(), y);
            break;
        case Op::Softcap:
            cpu::op_softcap(pool_, f32(n.src[0]), n.f[0], out.n_elements(), y);
            break;
        case Op::GatedAct:
            cpu::op_gated(pool_, static_cast<Activation>(n.i[0]), f32(n.src[0]), f32(n.src[1]),
                          out.n_elements(), y);
            break;
        case Op::Rope: {
            cpu::RopeParams p{n.i[0], n.i[1], static_cast<RopeMode>(n.i[2]),
                              n.f[0], n.f[1], opt_f32(n.src[2])};
            cpu::op_rope(pool_, ws_, f32(n.src[0]),
                         reinterpret_cast<const int32_t*>(data_of(g, n.src[1], io)), out.rows(),
                         out.cols(), p, y);
            break;
        }
        case Op::KvStore: {
            const GraphTensor& cache = g.tensor(n.src[1]);
            const GraphTensor& src = g.tensor(n.src[0]);  // its room: check_step_inputs
            cpu::op_kv_store(pool_, f32(n.src[0]), src.rows(), src.cols(), cache.type,
                             data_of(g, n.src[1], io), io.n_past);
            break;
        }
        case Op::Attention: {
            const GraphTensor& kc = g.tensor(n.src[1]);
            cpu::AttentionParams p{n.i[0], n.i[1], n.i[2],  n.i[3],
                                   n.f[0], n.f[1], kc.type, kc.rows()};
            cpu::op_attention(pool_, ws_, f32(n.src[0]), out.rows(), io.n_past,
                              data_of(g, n.src[1], io), data_of(g, n.src[2], io), p, y);
            break;
        }
        case Op::MoeRoute: {
            const int64_t n_expert = g.tensor(n.src[0]).cols();
            if (n.i[0] < 1 || n.i[0] > n_expert)
                throw Error("cpu backend: moe_route k=" + std::to_string(n.i[0]) +
                            " must be in [1, " + std::to_string(n_expert) + "] (the expert count)");
            cpu::op_moe_route(f32(n.src[0]), out.rows(), g.tensor(n.src[0]).cols(), n.i[0],
                              n.i[1] != 0, y);
            break;
        }
        case Op::MoeFfn:
            cpu::op_moe_ffn(pool_, ws_, f32(n.src[0]), out.rows(), f32(n.src[1]),
                            static_cast<int>(g.tensor(n.src[1]).cols() / 2),
                            weight_ref(g, n.src[2]), weight_ref(g, n.src[3]),
                            weight_ref(g, n.src[4]), n.i[0], static_cast<Activation>(n.i[1]), y);
            break;
        case Op::AllReduce:
            if (y != f32(n.src[0]))
                std::memcpy(y, f32(n.src[0]),
                            sizeof(float) * static_cast<size_t>(out.n_elements()));
            if (collective_ && collective_->n_ranks() > 1)
                collective_->all_reduce_sum(y, static_cast<size_t>(out.n_elements()));
            break;
        case Op::AllGather: {
            const GraphTensor& src = g.tensor(n.src[0]);
            if (!collective_ || collective_->n_ranks() == 1) {
                std::memcpy(y, f32(n.src[0]),
                            sizeof(float) * static_cast<size_t>(src.n_elements()));
                break;
            }
            collective_->all_gather(f32(n.src[0]), static_cast<size_t>(src.n_elements()),
                                    ws_.gather, ws_.gather_sizes);
            // Rank r contributed [rows, cols_r]; interleave into [rows, sum cols_r].
            const int64_t rows = src.rows();
            int64_t col0 = 0;
            size_t at = 0;
            for (size_t sz : ws_.gather_sizes) {
                const int64_t cols_r = static_cast<int64_t>(sz) / rows;
                for (int64_t r = 0; r < rows; ++r)
                    std::memcpy(y + r * out.cols() + col0, ws_.gather.data() + at + r * cols_r,
                                sizeof(float) * static_cast<size_t>(cols_r));
                col0 += cols_r;
                at += sz;
            }
            if (col0 != out.cols())
                throw Error("all_gather: ranks gave " + std::to_string(col0) +
                            " columns, graph expects " + std::to_string(out.cols()));
            break;
        }
        case Op::TakeRows:
            std::memcpy(y, f32(n.src[0]) + int64_t(n.i[0]) * out.cols(),
                        sizeof(float) * static_cast<size_t>(out.n_elements()));
            break;
        case Op::Copy:
            std::memcpy(y, f32(n.src[0]), sizeof(float) * static_cast<size_t>(out.n_elements()));
            break;
    }
}

class CpuBackendFactory final : public BackendFactory {
  public:
    std::string name() const override { return "cpu"; }
    std::vector<DeviceInfo> devices() override {
        DeviceInfo d;
        d.backend = "cpu";
        d.index = 0;
        d.name = cpu_model_name();
        d.driver = cpu_features_string();
        d.type = DeviceType::Cpu;
        auto mem = host_memory();
        d.memory_total = mem.total;
        d.memory_free = mem.available;
        d.unified_memory = true;
        return {d};
    }
    std::unique_ptr<Backend> create(int, const BackendOptions& options) override {
        return std::make_unique<CpuBackend>(devices().front(), options.threads);
    }
};

}  // namespace

std::shared_ptr<BackendFactory> make_cpu_backend_factory() {
    return std::make_shared<CpuBackendFactory>();
}

}  // namespace tandem
