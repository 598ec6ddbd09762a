#pragma once
// One logical Vulkan device: a compute queue, a command pool, a fence, and buffers addressed by
// device address (buffer_device_address) so shaders take raw pointers in push constants and no
// descriptor sets exist at all (nothing to allocate or update per step).
#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>

#include "vk_device_list.h"

namespace tandem::vk {

// Throws tandem::Error naming the call when r is not VK_SUCCESS.
void check(VkResult r, const char* what);

struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint64_t size = 0;
    uint64_t address = 0;    // device address of byte 0 (of the data, when imported)
    void* mapped = nullptr;  // host pointer when the memory is host-visible
    uint64_t allocated = 0;  // bytes of memory behind it as allocated (the driver's size)
    uint32_t heap = VK_MAX_MEMORY_HEAPS;  // the memory heap of an allocation made here
};

class Context {
  public:
    explicit Context(const PhysicalDevice& pd);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    // Device-local memory, host-visible too when such a type exists (unified memory, ReBAR). On
    // unified memory another heap's host-visible memory when the device-local heap's budget is
    // spent or its allocation fails (memory_type_order, vk_heaps.h).
    Buffer create_device_buffer(uint64_t size, const std::string& what);
    // Host-visible, host-coherent memory (staging, step inputs/outputs). read_by_host: host-cached
    // too where the device has such a type (the host reads what the GPU wrote: uncached,
    // write-combined memory is slow to read).
    Buffer create_host_buffer(uint64_t size, const std::string& what, bool read_by_host = false);
    // Wraps host memory [data, data + n) in place as a device buffer (VK_EXT_external_memory_host,
    // unified-memory devices only); `address` is then data's device address. Returns false,
    // creating nothing, when the device or driver does not allow it (why: in *why).
    bool import_host(const void* data, uint64_t n, Buffer& out, std::string* why);
    void destroy(Buffer& b);
    // Copies host bytes into b at offset: directly when mapped, else through a staging buffer
    // in large chunks (waits for the copies to finish).
    void upload(const Buffer& b, uint64_t offset, const void* data, uint64_t n);
    void fill_zero(const Buffer& b);

    VkDevice device() const { return device_; }
    VkQueue queue() const { return queue_; }
    VkCommandPool command_pool() const { return pool_; }
    const PhysicalDevice& physical() const { return pd_; }
    uint32_t subgroup_size() const { return pd_.subgroup_size; }
    // TANDEM_VK_PIPELINE_STATS asked and VK_KHR_pipeline_executable_properties enabled for it.
    bool pipeline_stats() const { return pipeline_stats_; }
    // Every vkAllocateMemory of this context (buffers of the backend and the staging buffer),
    // counted where it happens: bytes held now, the most held at once, allocations made.
    uint64_t live_bytes() const { return live_bytes_; }
    uint64_t peak_bytes() const { return peak_bytes_; }
    uint64_t n_allocations() const { return n_allocations_; }
    // Bytes this context holds in each heap, for the log: "heap 1 (device-local) 60.00 GiB, ...".
    std::string heap_use() const;
    // Bytes the device's buffers may still take now (vk_heaps.h's usable_memory, budget less
    // usage over the heaps counted).
    uint64_t usable_free() const;

    // Runs one command buffer and waits for it (fence reused).
    void submit_and_wait(VkCommandBuffer cb);
    // Runs n command buffers in order in one vkQueueSubmit and waits for them.
    void submit_and_wait(const VkCommandBuffer* cbs, uint32_t n);
    // Queues a command buffer without waiting (a later submit_and_wait's fence covers it too:
    // a fence signals after everything earlier in submission order).
    void submit(VkCommandBuffer cb);

  private:
    Buffer create_buffer(uint64_t size, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid,
                         const std::string& what);
    int find_memory_type(uint32_t bits, VkMemoryPropertyFlags want,
                         VkMemoryPropertyFlags avoid) const;

    PhysicalDevice pd_;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkCommandBuffer transfer_cb_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    VkPhysicalDeviceMemoryProperties mem_{};
    Buffer staging_;
    bool host_import_ = false;  // VK_EXT_external_memory_host enabled
    bool pipeline_stats_ = false;
    PFN_vkGetMemoryHostPointerPropertiesEXT host_pointer_props_ = nullptr;
    uint64_t live_bytes_ = 0, peak_bytes_ = 0, n_allocations_ = 0;
    uint64_t heap_bytes_[VK_MAX_MEMORY_HEAPS] = {};
};

}  // namespace tandem::vk
