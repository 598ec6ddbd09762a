#include "vk_heaps.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace tandem::vk {

namespace {

// Types no buffer of this backend may come from: protected memory and AMD's device-coherent
// types need device features it does not enable.
constexpr VkMemoryPropertyFlags kNeverFlags = VK_MEMORY_PROPERTY_PROTECTED_BIT |
                                              VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD |
                                              VK_MEMORY_PROPERTY_DEVICE_UNCACHED_BIT_AMD;
constexpr VkMemoryPropertyFlags kHostFlags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                             VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                             VK_MEMORY_PROPERTY_HOST_CACHED_BIT;

bool has(VkMemoryPropertyFlags f, VkMemoryPropertyFlags bits) {
    return (f & bits) == bits;
}

uint64_t room(const HeapBudget& b, uint32_t heap) {
    return b.budget[heap] > b.usage[heap] ? b.budget[heap] - b.usage[heap] : 0;
}

}  // namespace

HeapBudget heap_sizes_as_budget(const VkPhysicalDeviceMemoryProperties& props) {
    HeapBudget b;
    for (uint32_t h = 0; h < props.memoryHeapCount && h < VK_MAX_MEMORY_HEAPS; ++h)
        b.budget[h] = props.memoryHeaps[h].size;
    return b;
}

HeapBudget heap_budget_of(const VkPhysicalDeviceMemoryBudgetPropertiesEXT& b) {
    HeapBudget out;
    std::copy(std::begin(b.heapBudget), std::end(b.heapBudget), std::begin(out.budget));
    std::copy(std::begin(b.heapUsage), std::end(b.heapUsage), std::begin(out.usage));
    return out;
}

UsableMemory usable_memory(const VkPhysicalDeviceMemoryProperties& props, const HeapBudget& budget,
                           bool unified) {
    UsableMemory u;
    u.unified = unified;
    for (uint32_t t = 0; t < props.memoryTypeCount; ++t) {
        const VkMemoryType& type = props.memoryTypes[t];
        if (type.propertyFlags & kNeverFlags) continue;
        const bool local = type.propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
        const bool host = type.propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
        if (local || (unified && host)) u.heaps |= 1u << type.heapIndex;
    }
    // A discrete GPU's device-local heap is counted even where its only types are flagged in a
    // way skipped above; the heap flag is what names it.
    for (uint32_t h = 0; h < props.memoryHeapCount; ++h)
        if (props.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) u.heaps |= 1u << h;
    for (uint32_t h = 0; h < props.memoryHeapCount; ++h) {
        if (!(u.heaps & (1u << h))) continue;
        u.total += props.memoryHeaps[h].size;
        u.free += room(budget, h);
    }
    return u;
}

std::string pooled_heaps_note(const VkPhysicalDeviceMemoryProperties& props,
                              const UsableMemory& usable) {
    std::string s;
    int n = 0;
    for (uint32_t h = 0; h < props.memoryHeapCount; ++h) {
        if (!(usable.heaps & (1u << h))) continue;
        char part[80];
        std::snprintf(
            part, sizeof part, "%sheap %u (%s) %.1f GiB", n++ ? " + " : "", h,
            props.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT ? "device-local" : "host",
            double(props.memoryHeaps[h].size) / double(1ull << 30));
        s += part;
    }
    return usable.unified && n > 1 ? "memory: " + s + ", one pool (unified memory)" : "";
}

std::vector<uint32_t> memory_type_order(const VkPhysicalDeviceMemoryProperties& props,
                                        const HeapBudget& budget, uint32_t allowed,
                                        VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid,
                                        bool unified, uint64_t size) {
    std::vector<uint32_t> order;
    auto add_matching = [&](auto&& ok) {
        for (uint32_t t = 0; t < props.memoryTypeCount; ++t) {
            const VkMemoryPropertyFlags f = props.memoryTypes[t].propertyFlags;
            if (!(allowed & (1u << t)) || (f & kNeverFlags) || !ok(f)) continue;
            if (std::find(order.begin(), order.end(), t) == order.end()) order.push_back(t);
        }
    };
    add_matching([&](VkMemoryPropertyFlags f) { return has(f, want) && !(f & avoid); });
    add_matching([&](VkMemoryPropertyFlags f) { return has(f, want); });
    const VkMemoryPropertyFlags host_want = want & kHostFlags;
    if (unified && (want & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) {
        add_matching([&](VkMemoryPropertyFlags f) {
            return has(f, host_want) && !(f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
        });
        add_matching([&](VkMemoryPropertyFlags f) { return has(f, host_want); });
    }
    if (!(want & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
        add_matching([](VkMemoryPropertyFlags) { return true; });
    if (!unified) {
        if (order.size() > 1) order.erase(order.begin() + 1, order.end());
        return order;
    }
    std::stable_partition(order.begin(), order.end(), [&](uint32_t t) {
        return room(budget, props.memoryTypes[t].heapIndex) >= size;
    });
    return order;
}

}  // namespace tandem::vk
