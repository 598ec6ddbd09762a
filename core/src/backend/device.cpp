#include "tandem/backend/device.h"

namespace tandem {

const char* device_type_name(DeviceType t) {
    switch (t) {
        case DeviceType::Cpu:
            return "cpu";
        case DeviceType::DiscreteGpu:
            return "gpu";
        case DeviceType::IntegratedGpu:
            return "igpu";
        case DeviceType::VirtualGpu:
            return "vgpu";
        case DeviceType::CpuEmulated:
            return "cpu-emulated";
    }
    return "?";
}

}  // namespace tandem
