#pragma once
// Enumerates Vulkan physical devices with the facts the planner and the UI need.
#include <vulkan/vulkan.h>

#include <string>
#include <vector>

#include "tandem/backend/device.h"
#include "vk_heaps.h"

namespace tandem::vk {

struct PhysicalDevice {
    VkPhysicalDevice handle = VK_NULL_HANDLE;
    DeviceInfo info;
    uint32_t compute_queue_family = 0;
    uint32_t subgroup_size = 0;
    bool subgroup_arithmetic = false;   // subgroupAdd etc. in compute shaders
    bool subgroup_shuffle = false;      // subgroupShuffleXor in compute shaders
    uint32_t max_shared_bytes = 16384;  // maxComputeSharedMemorySize
    uint32_t max_workgroup_invocations = 128;
    float timestamp_period_ns = 0;  // 0: no timestamps on the compute queue
    bool memory_budget_ext = false;
    bool external_memory_host_ext = false;
    bool pipeline_executable_ext = false;  // VK_KHR_pipeline_executable_properties
    uint64_t host_import_alignment = 0;    // minImportedHostPointerAlignment (with the extension)
    bool shader_float16 = false;
    // VK_KHR_shader_integer_dot_product with its shaderIntegerDotProduct feature (enabled at
    // device creation); accelerated: the 4x8-bit packed signed form is a native instruction.
    bool shader_int8_dot = false;
    bool int8_dot_accelerated = false;
    // VK_KHR_cooperative_matrix with a 16x16x16 f16 x f16 -> f32 subgroup shape, subgroups of
    // 32, f16 arithmetic and the Vulkan memory model: what matmul_coopmat.comp needs.
    bool coopmat_f16 = false;
    // VK_EXT_subgroup_size_control for compute: a pipeline may ask for subgroups of 32 (RADV
    // runs compute in 64 by default); full_subgroups: computeFullSubgroups.
    bool subgroup_size_control = false;
    bool full_subgroups = false;
    std::string coopmat_why_not;       // why not, for the log
    uint64_t max_buffer_size = 0;      // per-descriptor limit (maxStorageBufferRange); unused with
                                       // device addresses, reported for the record
    uint64_t max_allocation_size = 0;  // one vkAllocateMemory (maxMemoryAllocationSize)
};

// The device's memory heaps and types (into *props where given) and each heap's budget and
// usage now: VK_EXT_memory_budget's where the device has it (budget_ext), else the heap sizes.
HeapBudget query_heap_budget(VkPhysicalDevice pd, bool budget_ext,
                             VkPhysicalDeviceMemoryProperties* props = nullptr);

// Owns the VkInstance; devices are sorted GPUs first (discrete, integrated), CPU drivers last.
class Instance {
  public:
    Instance();  // throws tandem::Error when no instance can be created
    ~Instance();
    Instance(const Instance&) = delete;
    Instance& operator=(const Instance&) = delete;

    VkInstance handle() const { return instance_; }
    const std::vector<PhysicalDevice>& devices() const { return devices_; }

  private:
    VkInstance instance_ = VK_NULL_HANDLE;
    std::vector<PhysicalDevice> devices_;
};

}  // namespace tandem::vk
