#pragma once
// The backend interface: one factory per kind of backend (cpu, vulkan, hip), one Backend per
// device in use. The compute part (buffers, the op set, step recording) is defined with the
// engine; see docs/architecture.md.
#include <memory>
#include <string>
#include <vector>

#include "tandem/backend/device.h"

namespace tandem {

struct BackendOptions {
    int threads = 0;  // CPU threads (0 = all physical cores)
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual const DeviceInfo& device() const = 0;
};

class BackendFactory {
public:
    virtual ~BackendFactory() = default;
    virtual std::string name() const = 0;
    virtual std::vector<DeviceInfo> devices() = 0;
    virtual std::unique_ptr<Backend> create(int device_index, const BackendOptions& options) = 0;
};

}  // namespace tandem
