#include "vk_context.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "vk_coopmat_khr.h"

namespace tandem::vk {

void check(VkResult r, const char* what) {
    if (r != VK_SUCCESS)
        throw Error(std::string("vulkan: ") + what + " failed (VkResult " + std::to_string(r) +
                    ")");
}

namespace {
// Weights upload through a staging buffer of this size on devices without host-visible
// device memory: large enough that the copies run at full PCIe speed.
constexpr uint64_t kStagingBytes = 64ull << 20;
}  // namespace

Context::Context(const PhysicalDevice& pd) : pd_(pd) {
    VkPhysicalDeviceVulkan12Features have12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 have{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    have.pNext = &have12;
    vkGetPhysicalDeviceFeatures2(pd.handle, &have);
    if (!have12.bufferDeviceAddress)
        throw Error("vulkan: device '" + pd.info.name +
                    "' lacks bufferDeviceAddress (Vulkan 1.2), which this backend needs");

    VkPhysicalDeviceVulkan12Features want12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    want12.bufferDeviceAddress = VK_TRUE;
    want12.storageBuffer8BitAccess = have12.storageBuffer8BitAccess;
    want12.shaderFloat16 = have12.shaderFloat16;
    VkPhysicalDeviceFeatures2 want{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    want.pNext = &want12;

    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = pd.compute_queue_family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    std::vector<const char*> exts;
    if (pd.memory_budget_ext) exts.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    // Weights are imported in place only where host memory is the device's memory anyway.
    host_import_ =
        pd.external_memory_host_ext && pd.info.unified_memory && pd.host_import_alignment > 0;
    if (host_import_) exts.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    // The int8-dot decode matvec (matvec_q8.comp) needs the feature enabled.
    VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR idot{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
    if (pd.shader_int8_dot) {
        exts.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
        idot.shaderIntegerDotProduct = VK_TRUE;
        want12.pNext = &idot;
    }
    // The cooperative-matrix kernels (matmul_coopmat.comp, attention_flash_coopmat.comp):
    // their SPIR-V declares the Vulkan memory model.
    CoopMatFeatures coopmat;
    if (pd.coopmat_f16) {
        exts.push_back(kCoopMatExtension);
        coopmat.cooperativeMatrix = VK_TRUE;
        coopmat.pNext = want12.pNext;
        want12.pNext = &coopmat;
        want12.vulkanMemoryModel = VK_TRUE;
        want12.vulkanMemoryModelDeviceScope = have12.vulkanMemoryModelDeviceScope;
    }
    // Their pipelines ask for subgroups of 32 where the device can be asked.
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT size_control{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
    if (pd.coopmat_f16 && pd.subgroup_size_control) {
        exts.push_back(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
        size_control.subgroupSizeControl = VK_TRUE;
        size_control.computeFullSubgroups = pd.full_subgroups ? VK_TRUE : VK_FALSE;
        size_control.pNext = want12.pNext;
        want12.pNext = &size_control;
    }
    // TANDEM_VK_PIPELINE_STATS=1: the driver's statistics of each pipeline (registers, spills),
    // for tuning runs; a device without them says so once.
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    if (const char* s = std::getenv("TANDEM_VK_PIPELINE_STATS"); s && std::string(s) != "0") {
        if (pd.pipeline_executable_ext) {
            VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
            f.pNext = &exec;
            vkGetPhysicalDeviceFeatures2(pd.handle, &f);
            pipeline_stats_ = exec.pipelineExecutableInfo == VK_TRUE;
            exec.pNext = nullptr;
        }
        if (pipeline_stats_) {
            exts.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
            exec.pNext = want12.pNext;
            want12.pNext = &exec;
        } else {
            log_info("vulkan: TANDEM_VK_PIPELINE_STATS: '" + pd.info.name +
                     "' has no VK_KHR_pipeline_executable_properties (no statistics)");
        }
    }
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &want;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = static_cast<uint32_t>(exts.size());
    dci.ppEnabledExtensionNames = exts.data();
    check(vkCreateDevice(pd.handle, &dci, nullptr, &device_), "vkCreateDevice");
    vkGetDeviceQueue(device_, pd.compute_queue_family, 0, &queue_);
    if (host_import_) {
        host_pointer_props_ = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
            vkGetDeviceProcAddr(device_, "vkGetMemoryHostPointerPropertiesEXT"));
        host_import_ = host_pointer_props_ != nullptr;
    }

    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = pd.compute_queue_family;
    check(vkCreateCommandPool(device_, &pci, nullptr, &pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = pool_;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(device_, &cai, &transfer_cb_), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(vkCreateFence(device_, &fci, nullptr, &fence_), "vkCreateFence");
    vkGetPhysicalDeviceMemoryProperties(pd.handle, &mem_);
}

Context::~Context() {
    if (!device_) return;
    vkDeviceWaitIdle(device_);
    destroy(staging_);
    if (fence_) vkDestroyFence(device_, fence_, nullptr);
    if (pool_) vkDestroyCommandPool(device_, pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
}

int Context::find_memory_type(uint32_t bits, VkMemoryPropertyFlags want,
                              VkMemoryPropertyFlags avoid) const {
    for (uint32_t i = 0; i < mem_.memoryTypeCount; ++i) {
        const auto f = mem_.memoryTypes[i].propertyFlags;
        if ((bits & (1u << i)) && (f & want) == want && !(f & avoid)) return static_cast<int>(i);
    }
    return -1;
}

uint64_t Context::usable_free() const {
    return usable_memory(mem_, query_heap_budget(pd_.handle, pd_.memory_budget_ext),
                         pd_.info.unified_memory)
        .free;
}

std::string Context::heap_use() const {
    std::string s;
    for (uint32_t h = 0; h < mem_.memoryHeapCount; ++h) {
        if (!heap_bytes_[h]) continue;
        const bool gib = heap_bytes_[h] >= (1ull << 30);
        char line[96];
        std::snprintf(
            line, sizeof line, "%sheap %u (%s) %.2f %s", s.empty() ? "" : ", ", h,
            mem_.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT ? "device-local" : "host",
            double(heap_bytes_[h]) / double(gib ? 1ull << 30 : 1ull << 20), gib ? "GiB" : "MiB");
        s += line;
    }
    return s;
}

Buffer Context::create_buffer(uint64_t size, VkMemoryPropertyFlags want,
                              VkMemoryPropertyFlags avoid, const std::string& what) {
    if (pd_.max_allocation_size && size > pd_.max_allocation_size)
        throw Error("vulkan: " + what + " needs " + std::to_string(size) +
                    " bytes in one buffer; '" + pd_.info.name + "' allows at most " +
                    std::to_string(pd_.max_allocation_size));
    Buffer b;
    b.size = std::max<uint64_t>(size, 16);
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = b.size;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    check(vkCreateBuffer(device_, &bci, nullptr, &b.buffer), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device_, b.buffer, &req);
    // Unified memory: the types of every heap, those with budget left first, tried in turn.
    const std::vector<uint32_t> types =
        memory_type_order(mem_, query_heap_budget(pd_.handle, pd_.memory_budget_ext),
                          req.memoryTypeBits, want, avoid, pd_.info.unified_memory, req.size);
    if (types.empty()) {
        vkDestroyBuffer(device_, b.buffer, nullptr);
        throw Error("vulkan: no memory type for " + what);
    }
    VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
    flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.pNext = &flags;
    mai.allocationSize = req.size;
    VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    std::string tried;
    for (uint32_t type : types) {
        mai.memoryTypeIndex = type;
        r = vkAllocateMemory(device_, &mai, nullptr, &b.memory);
        tried += (tried.empty() ? "" : ", ") + std::to_string(type) + " (heap " +
                 std::to_string(mem_.memoryTypes[type].heapIndex) + ")";
        if (r != VK_ERROR_OUT_OF_DEVICE_MEMORY && r != VK_ERROR_OUT_OF_HOST_MEMORY) break;
    }
    if (r != VK_SUCCESS) {
        vkDestroyBuffer(device_, b.buffer, nullptr);
        throw Error("vulkan: cannot allocate " + std::to_string(size) + " bytes for " + what +
                    " on '" + pd_.info.name + "' (VkResult " + std::to_string(r) +
                    "; memory types tried: " + tried + ")");
    }
    const uint32_t type = mai.memoryTypeIndex;
    b.allocated = req.size;
    b.heap = mem_.memoryTypes[type].heapIndex;
    heap_bytes_[b.heap] += b.allocated;
    live_bytes_ += b.allocated;
    peak_bytes_ = std::max(peak_bytes_, live_bytes_);
    ++n_allocations_;
    check(vkBindBufferMemory(device_, b.buffer, b.memory, 0), "vkBindBufferMemory");
    if (mem_.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
        check(vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
    VkBufferDeviceAddressInfo ai{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
    ai.buffer = b.buffer;
    b.address = vkGetBufferDeviceAddress(device_, &ai);
    return b;
}

Buffer Context::create_device_buffer(uint64_t size, const std::string& what) {
    // Host-visible + coherent device-local memory lets uploads be a memcpy (unified memory).
    const VkMemoryPropertyFlags unified = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                          VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                          VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if (pd_.info.unified_memory) return create_buffer(size, unified, 0, what);
    return create_buffer(size, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, what);
}

Buffer Context::create_host_buffer(uint64_t size, const std::string& what, bool read_by_host) {
    const VkMemoryPropertyFlags cached = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                         VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                         VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    if (read_by_host) {
        try {
            return create_buffer(size, cached, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, what);
        } catch (const Error&) {
            // no cached type this buffer may use: the plain host-coherent one below
        }
    }
    return create_buffer(
        size, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0, what);
}

bool Context::import_host(const void* data, uint64_t n, Buffer& out, std::string* why) {
    if (!host_import_) {
        *why = pd_.info.unified_memory ? "no VK_EXT_external_memory_host" : "not unified memory";
        return false;
    }
    // Whole pages around the data (the import granularity); the kernels may read a few bytes
    // past the end, which stay inside the last page.
    const uint64_t align = pd_.host_import_alignment;
    const auto at = reinterpret_cast<uintptr_t>(data);
    const uintptr_t base = at / align * align;
    const uint64_t size = (at + n + 16 + align - 1) / align * align - base;
    VkMemoryHostPointerPropertiesEXT hp{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
    VkResult r =
        host_pointer_props_(device_, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
                            reinterpret_cast<void*>(base), &hp);
    if (r != VK_SUCCESS || hp.memoryTypeBits == 0) {
        *why = "the driver refuses this host pointer (VkResult " + std::to_string(r) + ")";
        return false;
    }
    VkExternalMemoryBufferCreateInfo ext{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
    ext.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.pNext = &ext;
    bci.size = size;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
    Buffer b;
    check(vkCreateBuffer(device_, &bci, nullptr, &b.buffer), "vkCreateBuffer(imported)");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device_, b.buffer, &req);
    int type = find_memory_type(req.memoryTypeBits & hp.memoryTypeBits,
                                VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    if (type < 0) type = find_memory_type(req.memoryTypeBits & hp.memoryTypeBits, 0, 0);
    if (type < 0 || req.size > size) {
        vkDestroyBuffer(device_, b.buffer, nullptr);
        *why = "no memory type can hold an imported host pointer";
        return false;
    }
    VkImportMemoryHostPointerInfoEXT import{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
    import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    import.pHostPointer = reinterpret_cast<void*>(base);
    VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
    flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
    flags.pNext = &import;
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.pNext = &flags;
    mai.allocationSize = size;
    mai.memoryTypeIndex = static_cast<uint32_t>(type);
    r = vkAllocateMemory(device_, &mai, nullptr, &b.memory);
    if (r != VK_SUCCESS) {
        vkDestroyBuffer(device_, b.buffer, nullptr);
        *why = "importing the host pointer failed (VkResult " + std::to_string(r) + ")";
        return false;
    }
    check(vkBindBufferMemory(device_, b.buffer, b.memory, 0), "vkBindBufferMemory(imported)");
    VkBufferDeviceAddressInfo ai{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
    ai.buffer = b.buffer;
    b.address = vkGetBufferDeviceAddress(device_, &ai) + (at - base);
    b.size = n;
    out = b;
    return true;
}

void Context::destroy(Buffer& b) {
    if (b.mapped) vkUnmapMemory(device_, b.memory);
    if (b.buffer) vkDestroyBuffer(device_, b.buffer, nullptr);
    if (b.memory) vkFreeMemory(device_, b.memory, nullptr);
    live_bytes_ -= b.allocated;
    if (b.heap < VK_MAX_MEMORY_HEAPS) heap_bytes_[b.heap] -= b.allocated;
    b = Buffer{};
}

void Context::submit(VkCommandBuffer cb) {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    check(vkQueueSubmit(queue_, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
}

void Context::submit_and_wait(VkCommandBuffer cb) {
    submit_and_wait(&cb, 1);
}

void Context::submit_and_wait(const VkCommandBuffer* cbs, uint32_t n) {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = n;
    si.pCommandBuffers = cbs;
    check(vkQueueSubmit(queue_, 1, &si, fence_), "vkQueueSubmit");
    check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vkResetFences(device_, 1, &fence_), "vkResetFences");
}

void Context::upload(const Buffer& b, uint64_t offset, const void* data, uint64_t n) {
    if (offset + n > b.size) throw Error("vulkan: upload past the end of a buffer");
    if (b.mapped) {
        std::memcpy(static_cast<uint8_t*>(b.mapped) + offset, data, n);
        return;
    }
    if (!staging_.buffer) staging_ = create_host_buffer(kStagingBytes, "staging");
    const auto* src = static_cast<const uint8_t*>(data);
    for (uint64_t done = 0; done < n;) {
        const uint64_t len = std::min(kStagingBytes, n - done);
        std::memcpy(staging_.mapped, src + done, len);
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        check(vkBeginCommandBuffer(transfer_cb_, &bi), "vkBeginCommandBuffer");
        VkBufferCopy region{0, offset + done, len};
        vkCmdCopyBuffer(transfer_cb_, staging_.buffer, b.buffer, 1, &region);
        check(vkEndCommandBuffer(transfer_cb_), "vkEndCommandBuffer");
        submit_and_wait(transfer_cb_);
        done += len;
    }
}

void Context::fill_zero(const Buffer& b) {
    if (b.mapped) {
        std::memset(b.mapped, 0, b.size);
        return;
    }
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(transfer_cb_, &bi), "vkBeginCommandBuffer");
    vkCmdFillBuffer(transfer_cb_, b.buffer, 0, VK_WHOLE_SIZE, 0);
    check(vkEndCommandBuffer(transfer_cb_), "vkEndCommandBuffer");
    submit_and_wait(transfer_cb_);
}

}  // namespace tandem::vk
