#pragma once
// The backend interface: one factory per kind of backend (cpu, vulkan, hip), one Backend per
// device in use. A Backend holds a model's weights, its KV cache and a scratch buffer, and runs
// whole step graphs (graph.h). Sizes are known up front (the engine plans them), so nothing is
// allocated per step. See docs/engine.md.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tandem/backend/device.h"
#include "tandem/backend/graph.h"
#include "tandem/common/dtype.h"

namespace tandem {

class Collective;

struct BackendOptions {
    int threads = 0;  // CPU threads (0 = all physical cores)
};

// One weight as the engine hands it over: host bytes (the file mapping, or a slice the loader
// assembled) in the file's type and ggml shape.
struct WeightDesc {
    std::string name;
    DType type = DType::F32;
    std::array<int64_t, 3> ne{1, 1, 1};  // {n_in, n_out, n_expert}
    const void* data = nullptr;
    uint64_t nbytes = 0;
};

// One KV cache tensor (K or V of one layer): n_ctx rows of `width` elements.
struct KvDesc {
    DType type = DType::F16;  // F16 or F32
    int64_t width = 0;        // n_kv_head * head_dim held by this rank
    int64_t n_ctx = 0;
};

class Backend {
  public:
    virtual ~Backend() = default;
    virtual const DeviceInfo& device() const = 0;

    // The compute surface. Backends without it (plugins still in progress) keep the defaults,
    // which throw tandem::Error naming the backend.
    virtual bool can_compute() const { return false; }
    // Weights: called once per weight (slot = index the graph uses). `keep_host` says the host
    // bytes stay valid for the life of the backend, so a unified-memory device may use them in
    // place instead of copying.
    virtual void upload_weight(int slot, const WeightDesc& weight, bool keep_host);
    // KV cache: allocates (and zeroes) every KV tensor at once; slot = index in `kv`.
    virtual void allocate_kv(const std::vector<KvDesc>& kv);
    // Scratch large enough for any graph whose plan_scratch() returned <= bytes.
    virtual void reserve_scratch(uint64_t bytes);
    // Runs a whole step.
    virtual void compute(const Graph& graph, const StepIO& io);
    // Tensor-parallel hook for AllReduce/AllGather nodes (nullptr: single rank).
    virtual void set_collective(Collective* collective);
    // Bytes of device memory held now, by kind (for reports).
    virtual uint64_t weight_bytes() const { return 0; }
    virtual uint64_t kv_bytes() const { return 0; }
    virtual uint64_t scratch_bytes() const { return 0; }
    // Device memory held beyond weights, KV and scratch (staging, step inputs/outputs, per-op
    // buffers): what the planner's runtime overhead must cover. 0 where not counted.
    virtual uint64_t other_bytes() const { return 0; }
    // Device memory bandwidth in bytes/s (read + written) of one large device-to-device copy,
    // the yardstick for decode's achieved bandwidth; 0 when the backend does not measure it.
    virtual double copy_bandwidth() { return 0; }
};

class BackendFactory {
  public:
    virtual ~BackendFactory() = default;
    virtual std::string name() const = 0;
    virtual std::vector<DeviceInfo> devices() = 0;
    virtual std::unique_ptr<Backend> create(int device_index, const BackendOptions& options) = 0;
};

// Creates a backend by name ("cpu", "vulkan", "hip") and device index through the registry;
// throws tandem::Error saying which backends exist when the name is unknown or unavailable.
std::unique_ptr<Backend> create_backend(const std::string& name, int device_index,
                                        const BackendOptions& options);

}  // namespace tandem
