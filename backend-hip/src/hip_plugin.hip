// Plugin entry and device discovery for the HIP backend. Built by hipcc (AMD) or nvcc
// (through hip_compat.h), so only HIP runtime calls that hip_compat.h maps are used here.
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "hip_apu_memory.h"
#include "hip_backend.h"
#include "tandem/backend/backend.h"
#include "tandem/backend/registry.h"
#include "tandem/common/sysinfo.h"

namespace tandem::hip {
namespace {

// A number from the amdgpu driver's sysfs file of the device's PCI function, 0 where absent.
uint64_t amdgpu_sysfs(const hipDeviceProp_t& prop, const char* file) {
    char path[160];
    std::snprintf(path, sizeof path, "/sys/bus/pci/devices/%04x:%02x:%02x.0/%s",
                  unsigned(prop.pciDomainID), unsigned(prop.pciBusID), unsigned(prop.pciDeviceID),
                  file);
    std::ifstream f(path);
    uint64_t v = 0;
    f >> v;
    return f ? v : 0;
}

std::string gib(uint64_t b) {
    char s[32];
    std::snprintf(s, sizeof s, "%.1f GiB", double(b) / double(1ull << 30));
    return s;
}

// What an APU user needs to know: ROCm may see only the BIOS carve-out as "VRAM"; the rest of
// system memory is reachable through GTT, which this backend uses for weights in place.
std::string integrated_note(const ApuMemoryFacts& f) {
    std::string n = "integrated GPU: runtime sees " + gib(f.runtime_total);
    if (f.vram_total) n += ", VRAM (BIOS carve-out) " + gib(f.vram_total);
    if (f.gtt_total) n += ", GTT " + gib(f.gtt_total);
    n += ". Weights are used in place from the file mapping (GTT); the memory listed is the "
         "carve-out's free part plus what GTT can still map, up to the host's available memory. "
         "To give the GPU more, raise the GTT limit (kernel parameters amdgpu.gttsize=<MiB>, "
         "ttm.pages_limit=<4 KiB pages>)";
    return n;
}

DeviceInfo describe(int index) {
    hipDeviceProp_t prop{};
    // A failing query leaves its zero default: the device is listed with what could be read.
    (void)hipGetDeviceProperties(&prop, index);
    int integrated = 0;
    (void)hipDeviceGetAttribute(&integrated, hipDeviceAttributeIntegrated, index);
    size_t free_b = 0, total_b = 0;
    (void)hipSetDevice(index);
    (void)hipMemGetInfo(&free_b, &total_b);
    DeviceInfo d;
    d.backend = "hip";
    d.index = index;
    d.name = prop.name;
#if defined(TANDEM_HIP_ON_CUDA)
    d.driver =
        "CUDA (HIP compatibility) sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
#else
    d.driver = std::string("ROCm ") + prop.gcnArchName;
#endif
    d.type = integrated ? DeviceType::IntegratedGpu : DeviceType::DiscreteGpu;
    d.memory_total = total_b;
    d.memory_free = free_b;
    d.unified_memory = integrated != 0;
    if (integrated) {
        // Weights stay in host memory (GTT) here: the carve-out some runtimes report alone is
        // not this device's budget (hip_apu_memory.h).
        const ApuMemoryFacts facts{total_b,
                                   free_b,
                                   amdgpu_sysfs(prop, "mem_info_vram_total"),
                                   amdgpu_sysfs(prop, "mem_info_vram_used"),
                                   amdgpu_sysfs(prop, "mem_info_gtt_total"),
                                   amdgpu_sysfs(prop, "mem_info_gtt_used"),
                                   host_memory().available};
        const ApuMemory m = apu_memory(facts);
        d.memory_total = m.total;
        d.memory_free = m.free;
        d.notes = integrated_note(facts);
    }
    return d;
}

class HipFactory final : public BackendFactory {
  public:
    explicit HipFactory(int count) {
        for (int i = 0; i < count; ++i) devices_.push_back(describe(i));
    }
    std::string name() const override { return "hip"; }
    std::vector<DeviceInfo> devices() override { return devices_; }
    std::unique_ptr<Backend> create(int index, const BackendOptions&) override {
        if (index < 0 || index >= static_cast<int>(devices_.size())) return nullptr;
        return make_hip_backend(devices_[index]);
    }

  private:
    std::vector<DeviceInfo> devices_;
};

}  // namespace
}  // namespace tandem::hip

extern "C" __attribute__((visibility("default"))) tandem::BackendFactory* tandem_backend_factory_v1(
    std::string* err) {
    int count = 0;
    hipError_t e = hipGetDeviceCount(&count);
    if (e != hipSuccess || count == 0) {
#if defined(TANDEM_HIP_ON_CUDA)
        *err = std::string("no HIP device (") + hipGetErrorString(e) +
               "); this build runs through CUDA and needs an NVIDIA GPU with a driver at least as "
               "new as its CUDA runtime";
#else
        *err = std::string("no HIP device (") + hipGetErrorString(e) +
               "); ROCm needs /dev/kfd and a supported AMD GPU";
#endif
        return nullptr;
    }
    return new tandem::hip::HipFactory(count);
}
