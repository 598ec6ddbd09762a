#include <memory>

#include "tandem/backend/backend.h"
#include "tandem/common/sysinfo.h"

namespace tandem {
namespace {

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(DeviceInfo info) : info_(std::move(info)) {}
    const DeviceInfo& device() const override { return info_; }

private:
    DeviceInfo info_;
};

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
    std::unique_ptr<Backend> create(int, const BackendOptions&) override {
        return std::make_unique<CpuBackend>(devices().front());
    }
};

}  // namespace

std::shared_ptr<BackendFactory> make_cpu_backend_factory() {
    return std::make_shared<CpuBackendFactory>();
}

}  // namespace tandem
