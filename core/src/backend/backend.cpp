#include "tandem/backend/backend.h"

#include "tandem/backend/registry.h"
#include "tandem/common/error.h"

namespace tandem {

namespace {
[[noreturn]] void no_compute(const Backend& b, const char* what) {
    throw Error("backend '" + b.device().backend + "' (" + b.device().name + ") cannot " + what +
                " yet: its compute support is not built");
}
}  // namespace

void Backend::upload_weight(int, const WeightDesc&, bool) {
    no_compute(*this, "hold weights");
}
void Backend::allocate_kv(const std::vector<KvDesc>&) {
    no_compute(*this, "hold a KV cache");
}
void Backend::reserve_scratch(uint64_t) {
    no_compute(*this, "reserve scratch");
}
void Backend::compute(const Graph&, const StepIO&) {
    no_compute(*this, "run a graph");
}
void Backend::set_collective(Collective*) {
    no_compute(*this, "join a tensor-parallel group");
}

std::unique_ptr<Backend> create_backend(const std::string& name, int device_index,
                                        const BackendOptions& options) {
    auto& reg = BackendRegistry::instance();
    BackendFactory* f = reg.factory(name);
    if (!f) {
        std::string known;
        for (const auto& st : reg.backends()) {
            if (!known.empty()) known += ", ";
            known += st.name + (st.available ? "" : " (unavailable: " + st.reason + ")");
        }
        throw Error("backend '" + name + "' is not available; backends: " + known);
    }
    auto devs = f->devices();
    if (device_index < 0 || device_index >= static_cast<int>(devs.size()))
        throw Error("backend '" + name + "': no device " + std::to_string(device_index) +
                    " (it has " + std::to_string(devs.size()) + ")");
    auto b = f->create(device_index, options);
    if (!b->can_compute())
        throw Error("backend '" + name + "' found '" + devs[device_index].name +
                    "' but cannot run models yet");
    return b;
}

}  // namespace tandem
