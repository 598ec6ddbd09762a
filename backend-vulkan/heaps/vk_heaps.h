#pragma once
// Which memory heaps a device's buffers may use, and in which order its memory types are tried.
// Pure functions of the driver's VkPhysicalDeviceMemoryProperties and VK_EXT_memory_budget's
// numbers, so tests can hand them the layouts real drivers report (RADV on an APU, NVIDIA,
// lavapipe) without such a device.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tandem::vk {

// Per heap: the budget and this process's usage (VK_EXT_memory_budget), or, without the
// extension, the heap's size and 0.
struct HeapBudget {
    uint64_t budget[VK_MAX_MEMORY_HEAPS] = {};
    uint64_t usage[VK_MAX_MEMORY_HEAPS] = {};
};

// Budgets of a device without VK_EXT_memory_budget: every heap whole and unused.
HeapBudget heap_sizes_as_budget(const VkPhysicalDeviceMemoryProperties& props);
// The extension's numbers as a HeapBudget.
HeapBudget heap_budget_of(const VkPhysicalDeviceMemoryBudgetPropertiesEXT& b);

struct UsableMemory {
    uint64_t total = 0;  // bytes of the heaps counted
    uint64_t free = 0;   // of them, budget less usage
    uint32_t heaps = 0;  // bit h set: heap h counted
    bool unified = false;
};

// The memory a device's buffers may use. A discrete GPU: its device-local heaps (host memory
// over the bus is no place for weights). Unified memory (an integrated GPU, a CPU driver): every
// heap a buffer can live in, all of them system memory the GPU reads at the same speed. RADV on
// an APU reports (carve-out + GTT) as a device-local heap of 2/3 and a host heap of 1/3, so the
// device-local heaps alone would refuse models that fit.
UsableMemory usable_memory(const VkPhysicalDeviceMemoryProperties& props, const HeapBudget& budget,
                           bool unified);

// For the device's notes where more than one heap is counted: "memory: heap 0 (host) 37.2 GiB
// + heap 1 (device-local) 74.4 GiB, one pool (unified memory)"; else "".
std::string pooled_heaps_note(const VkPhysicalDeviceMemoryProperties& props,
                              const UsableMemory& usable);

// The memory types to try for a buffer of `size` bytes whose requirements allow the types in
// `allowed` (memoryTypeBits), best first:
//   1. types with every flag of `want` and none of `avoid`;
//   2. types with every flag of `want`;
//   3. unified memory only: host-visible types with `want`'s host flags but not its
//      device-local bit, uncached before cached (the host heap of an APU);
//   4. where `want` has no host-visible bit: any type (device memory the host cannot map).
// Protected and AMD device-coherent types are never listed (this backend enables neither).
// On unified memory, types whose heap has budget left for `size` come first (in that order) and
// the rest follow, so an allocation tries another heap before it fails. A discrete GPU gets
// only the first type: a full device-local heap is an error to report, not a reason to put
// weights in host memory behind the bus.
std::vector<uint32_t> memory_type_order(const VkPhysicalDeviceMemoryProperties& props,
                                        const HeapBudget& budget, uint32_t allowed,
                                        VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid,
                                        bool unified, uint64_t size);

}  // namespace tandem::vk
