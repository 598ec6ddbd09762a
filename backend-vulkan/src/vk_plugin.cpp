// Plugin entry: the registry dlopens this library and calls tandem_backend_factory_v1.
#include <memory>

#include "tandem/backend/backend.h"
#include "tandem/backend/registry.h"
#include "vk_backend.h"
#include "vk_device_list.h"

namespace tandem::vk {
namespace {

class VulkanFactory final : public BackendFactory {
  public:
    explicit VulkanFactory(std::unique_ptr<Instance> instance) : instance_(std::move(instance)) {}
    std::string name() const override { return "vulkan"; }
    std::vector<DeviceInfo> devices() override {
        std::vector<DeviceInfo> out;
        for (const auto& d : instance_->devices()) out.push_back(d.info);
        return out;
    }
    std::unique_ptr<Backend> create(int index, const BackendOptions&) override {
        const auto& devs = instance_->devices();
        if (index < 0 || index >= static_cast<int>(devs.size())) return nullptr;
        return std::make_unique<VulkanBackend>(devs[index]);
    }

  private:
    std::unique_ptr<Instance> instance_;
};

}  // namespace
}  // namespace tandem::vk

extern "C" __attribute__((visibility("default"))) tandem::BackendFactory* tandem_backend_factory_v1(
    std::string* err) {
    try {
        auto instance = std::make_unique<tandem::vk::Instance>();
        if (instance->devices().empty()) {
            *err = "the Vulkan loader found no physical device";
            return nullptr;
        }
        return new tandem::vk::VulkanFactory(std::move(instance));
    } catch (const std::exception& e) {
        *err = e.what();
        return nullptr;
    }
}
