// Heap accounting and memory-type order (backend-vulkan/heaps) on the memory layouts drivers
// report. RADV's APU layout is rebuilt from its rules (radv_physical_device_init_mem_types and
// the APU branch of its budget query in Mesa 24-25): the visible carve-out plus GTT reported as
// a device-local heap of 2/3 and a host heap of 1/3, budgets sharing what is free the same way.
// The Strix Halo numbers are a user's boot log (512 MiB carve-out, 108000 MiB GTT).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "vk_heaps.h"

namespace tandem::test {
namespace {

using vk::HeapBudget;
using vk::memory_type_order;
using vk::usable_memory;

constexpr uint64_t MiB = 1ull << 20, GiB = 1ull << 30;
constexpr VkMemoryPropertyFlags DL = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                HV = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                HC = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                CACHED = VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                                AMD_COHERENT = VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD |
                                               VK_MEMORY_PROPERTY_DEVICE_UNCACHED_BIT_AMD;

struct Layout {
    VkPhysicalDeviceMemoryProperties props{};
    uint32_t buffer_types = 0;  // memoryTypeBits of a storage buffer
    int heap(uint64_t size, VkMemoryHeapFlags flags) {
        props.memoryHeaps[props.memoryHeapCount] = {size, flags};
        return int(props.memoryHeapCount++);
    }
    void type(VkMemoryPropertyFlags flags, int heap, bool buffers = true) {
        if (buffers) buffer_types |= 1u << props.memoryTypeCount;
        props.memoryTypes[props.memoryTypeCount++] = {flags, uint32_t(heap)};
    }
};

// RADV on an APU. unified_heap: the radv_enable_unified_heap_on_apu drirc option (one heap).
// The 32-bit address types are left out of a buffer's memoryTypeBits, as RADV does.
// device_coherent: VK_AMD_device_coherent_memory's types appended (RADV lists them when the
// device supports them, whether or not an application enables the feature).
Layout radv_apu(uint64_t carveout, uint64_t gtt, bool unified_heap, bool device_coherent = false) {
    const uint64_t total = carveout + gtt;
    uint64_t visible = unified_heap ? total : (total * 2 / 3 + 4095) / 4096 * 4096;
    const uint64_t gtt_heap = total - visible;
    Layout l;
    const int gart = gtt_heap ? l.heap(gtt_heap, 0) : -1;
    const int vis = l.heap(visible, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT);
    l.type(DL, vis);
    l.type(DL, vis, false);  // 32-bit
    if (gart >= 0) l.type(HV | HC, gart);
    l.type(DL | HV | HC, vis);
    l.type(DL | HV | HC, vis, false);
    if (gart >= 0) {
        l.type(HV | HC | CACHED, gart);
        l.type(HV | HC | CACHED, gart, false);
    }
    if (device_coherent) {
        const uint32_t n = l.props.memoryTypeCount;
        for (uint32_t t = 0; t < n; ++t) {
            if (!(l.buffer_types & (1u << t))) continue;  // RADV skips the 32-bit ones
            l.type(l.props.memoryTypes[t].propertyFlags | AMD_COHERENT,
                   int(l.props.memoryTypes[t].heapIndex));
        }
    }
    return l;
}

// RADV's APU budgets (radv_get_memory_budget_properties): what is free across both heaps goes
// 2/3 to the device-local heap, at most what its size leaves, page-aligned down, and the rest
// to the host heap; each budget counts its heap's usage. The unified-heap option: all of it.
HeapBudget radv_apu_budget(const Layout& l, uint64_t used_local, uint64_t used_host) {
    HeapBudget b;
    uint64_t total = 0;
    for (uint32_t h = 0; h < l.props.memoryHeapCount; ++h) total += l.props.memoryHeaps[h].size;
    const uint64_t free_all = total - used_local - used_host;
    if (l.props.memoryHeapCount == 1) {
        b.usage[0] = used_local;
        b.budget[0] = used_local + free_all;
        return b;
    }
    const uint64_t local_size = l.props.memoryHeaps[1].size;
    const uint64_t local_free =
        std::min(free_all * 2 / 3, local_size - std::min(local_size, used_local)) / 4096 * 4096;
    b.usage[1] = used_local;
    b.budget[1] = used_local + local_free;
    b.usage[0] = used_host;
    b.budget[0] = used_host + free_all - local_free;
    return b;
}

// NVIDIA's Linux driver on a discrete GPU: a device-local heap, the host heap, and the 256 MiB
// BAR window as a second device-local heap (no resizable BAR).
Layout nvidia_discrete(uint64_t vram, uint64_t host) {
    Layout l;
    const int local = l.heap(vram, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT);
    const int sys = l.heap(host, 0);
    const int bar = l.heap(256 * MiB, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT);
    l.type(0, sys);
    l.type(DL, local);
    l.type(DL, local);
    l.type(HV | HC, sys);
    l.type(HV | HC | CACHED, sys);
    l.type(DL | HV | HC, bar);
    return l;
}

// lavapipe: one heap of host memory, device-local and host-visible.
Layout lavapipe(uint64_t ram) {
    Layout l;
    l.type(DL | HV | HC | CACHED, l.heap(ram, VK_MEMORY_HEAP_DEVICE_LOCAL_BIT));
    return l;
}

TEST(VulkanHeaps, StrixHaloCountsCarveOutAndGtt) {
    const uint64_t carveout = 512 * MiB, gtt = 108000 * MiB;
    const Layout l = radv_apu(carveout, gtt, false);
    ASSERT_EQ(l.props.memoryHeapCount, 2u);
    // The device-local heap alone is 2/3: what counting device-local heaps only would offer.
    EXPECT_LT(double(l.props.memoryHeaps[1].size), 0.67 * double(carveout + gtt));
    const uint64_t used = 20 * GiB;
    const auto u = usable_memory(l.props, radv_apu_budget(l, used, 0), true);
    EXPECT_EQ(u.total, carveout + gtt);
    EXPECT_EQ(u.free, carveout + gtt - used);
    EXPECT_EQ(u.heaps, 3u);
    // Nothing held yet: 90 GiB of weights fit in what is free, not in the device-local
    // heap's budget alone.
    const HeapBudget idle = radv_apu_budget(l, 0, 0);
    EXPECT_GT(usable_memory(l.props, idle, true).free, 90 * GiB);
    EXPECT_LT(idle.budget[1], 90 * GiB);
    const std::string note = vk::pooled_heaps_note(l.props, u);
    EXPECT_NE(note.find("heap 0 (host)"), std::string::npos) << note;
    EXPECT_NE(note.find("heap 1 (device-local)"), std::string::npos) << note;
}

TEST(VulkanHeaps, UnifiedHeapOptionIsOneHeap) {
    const Layout l = radv_apu(512 * MiB, 108000 * MiB, true);
    ASSERT_EQ(l.props.memoryHeapCount, 1u);
    const auto u = usable_memory(l.props, radv_apu_budget(l, 0, 0), true);
    EXPECT_EQ(u.total, 108512 * MiB);
    EXPECT_EQ(u.free, 108512 * MiB);
    EXPECT_EQ(vk::pooled_heaps_note(l.props, u), "");
    // Device buffers: the host-visible device-local type (2), then device-local only (0) is
    // not offered, since the upload maps the memory.
    EXPECT_EQ(memory_type_order(l.props, radv_apu_budget(l, 0, 0), l.buffer_types, DL | HV | HC, 0,
                                true, GiB),
              (std::vector<uint32_t>{2}));
}

TEST(VulkanHeaps, StrixHaloDeviceBuffersMoveToGttWhenTheLocalBudgetIsSpent) {
    const Layout l = radv_apu(512 * MiB, 108000 * MiB, false);
    // Types: 0 DL, 1 DL 32-bit, 2 GTT write-combined, 3 DL|HV|HC, 4 its 32-bit twin, 5 GTT
    // cached, 6 its 32-bit twin. Room in the device-local heap: it first, then GTT uncached,
    // then cached.
    const HeapBudget roomy = radv_apu_budget(l, 0, 0);
    EXPECT_EQ(memory_type_order(l.props, roomy, l.buffer_types, DL | HV | HC, 0, true, GiB),
              (std::vector<uint32_t>{3, 2, 5}));
    // 70 GiB held in the device-local heap: its budget has no room for 4 GiB more, GTT has.
    const HeapBudget spent = radv_apu_budget(l, 70 * GiB, 0);
    ASSERT_LT(spent.budget[1] - spent.usage[1], 4 * GiB);
    ASSERT_GT(spent.budget[0] - spent.usage[0], 4 * GiB);
    EXPECT_EQ(memory_type_order(l.props, spent, l.buffer_types, DL | HV | HC, 0, true, 4 * GiB),
              (std::vector<uint32_t>{2, 5, 3}));
    // Staging / outputs the host reads: cached host memory only.
    EXPECT_EQ(memory_type_order(l.props, roomy, l.buffer_types, HV | HC | CACHED, DL, true, MiB),
              (std::vector<uint32_t>{5}));
}

TEST(VulkanHeaps, DeviceCoherentAndProtectedTypesAreNeverChosen) {
    Layout l = radv_apu(512 * MiB, 108000 * MiB, false, true);
    l.type(DL | VK_MEMORY_PROPERTY_PROTECTED_BIT, 1);
    ASSERT_GT(l.props.memoryTypeCount, 7u);
    const HeapBudget b = radv_apu_budget(l, 0, 0);
    for (VkMemoryPropertyFlags want : {DL, DL | HV | HC, HV | HC, VkMemoryPropertyFlags(0)}) {
        for (uint32_t t : memory_type_order(l.props, b, l.buffer_types, want, 0, true, MiB)) {
            const VkMemoryPropertyFlags f = l.props.memoryTypes[t].propertyFlags;
            EXPECT_EQ(f & (AMD_COHERENT | VK_MEMORY_PROPERTY_PROTECTED_BIT), 0u)
                << "want " << want << ": type " << t;
        }
    }
    EXPECT_EQ(memory_type_order(l.props, b, l.buffer_types, DL | HV | HC, 0, true, GiB),
              (std::vector<uint32_t>{3, 2, 5}));
}

TEST(VulkanHeaps, DiscreteGpuCountsDeviceLocalHeapsAndNeverFallsBackToHost) {
    const Layout l = nvidia_discrete(141 * GiB, 256 * GiB);
    HeapBudget b = vk::heap_sizes_as_budget(l.props);
    const auto u = usable_memory(l.props, b, false);
    EXPECT_EQ(u.total, 141 * GiB + 256 * MiB);  // VRAM and the BAR window, not the host heap
    EXPECT_EQ(u.heaps, 0b101u);
    EXPECT_EQ(vk::pooled_heaps_note(l.props, u), "");  // only for unified memory's pools
    EXPECT_EQ(memory_type_order(l.props, b, l.buffer_types, DL, 0, false, GiB),
              (std::vector<uint32_t>{1}));
    // VRAM spent: still the VRAM type alone (the allocation's failure is the error to report).
    b.usage[0] = b.budget[0];
    EXPECT_EQ(memory_type_order(l.props, b, l.buffer_types, DL, 0, false, GiB),
              (std::vector<uint32_t>{1}));
    // Host buffers on a discrete GPU: the cached host type for what the host reads back.
    EXPECT_EQ(memory_type_order(l.props, b, l.buffer_types, HV | HC | CACHED, DL, false, MiB),
              (std::vector<uint32_t>{4}));
    EXPECT_EQ(memory_type_order(l.props, b, l.buffer_types, HV | HC, 0, false, MiB),
              (std::vector<uint32_t>{3}));
}

TEST(VulkanHeaps, LavapipeIsOneHeap) {
    const Layout l = lavapipe(24 * GiB);
    const HeapBudget b = vk::heap_sizes_as_budget(l.props);
    const auto u = usable_memory(l.props, b, true);
    EXPECT_EQ(u.total, 24 * GiB);
    EXPECT_EQ(u.free, 24 * GiB);
    EXPECT_EQ(memory_type_order(l.props, b, l.buffer_types, DL | HV | HC, 0, true, GiB),
              (std::vector<uint32_t>{0}));
    // Bigger than the heap: still listed (the driver decides), nothing else to try.
    EXPECT_EQ(memory_type_order(l.props, b, l.buffer_types, DL | HV | HC, 0, true, 32 * GiB),
              (std::vector<uint32_t>{0}));
}

}  // namespace
}  // namespace tandem::test
