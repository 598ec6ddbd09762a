#pragma once
// Finds the backends available in this process: the CPU backend (always) and the GPU backend
// plugins (libtandem-backend-<name>.so next to the executable, or in $TANDEM_PLUGIN_DIR). A plugin
// whose driver or runtime is missing is skipped with one log line saying why; the rest still work.
#include <memory>
#include <string>
#include <vector>

#include "tandem/backend/device.h"

namespace tandem {

class BackendFactory;  // defined in backend.h

struct BackendStatus {
    std::string name;  // "vulkan"
    bool available = false;
    std::string reason;  // why not available ("libvulkan.so.1: cannot open shared object file")
    std::vector<DeviceInfo> devices;
};

class BackendRegistry {
  public:
    // The process-wide registry; loads plugins on first use.
    static BackendRegistry& instance();

    const std::vector<BackendStatus>& backends() const { return status_; }
    // nullptr if the backend is unknown or unavailable.
    BackendFactory* factory(const std::string& name) const;
    std::vector<DeviceInfo> all_devices() const;
    // Registers a factory (used by the CPU backend and by plugins).
    void add(std::shared_ptr<BackendFactory> factory);
    void add_unavailable(const std::string& name, const std::string& reason);

  private:
    BackendRegistry();
    void load_plugins();
    std::vector<BackendStatus> status_;
    std::vector<std::shared_ptr<BackendFactory>> factories_;
};

// The ABI a plugin exports: extern "C" BackendFactory* tandem_backend_factory_v1(std::string* err)
// returns a new factory, or nullptr with *err set when its runtime has no usable device.
using BackendPluginEntry = BackendFactory* (*)(std::string* err);
inline constexpr const char* kBackendPluginSymbol = "tandem_backend_factory_v1";

}  // namespace tandem
