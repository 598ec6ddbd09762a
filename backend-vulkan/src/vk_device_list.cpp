#include "vk_device_list.h"

#include <algorithm>
#include <cstring>

#include "tandem/common/error.h"
#include "vk_coopmat_khr.h"

namespace tandem::vk {
namespace {

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
    return std::any_of(exts.begin(), exts.end(), [&](const VkExtensionProperties& e) {
        return std::strcmp(e.extensionName, name) == 0;
    });
}

DeviceType to_device_type(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
            return DeviceType::DiscreteGpu;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
            return DeviceType::IntegratedGpu;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
            return DeviceType::VirtualGpu;
        case VK_PHYSICAL_DEVICE_TYPE_CPU:
            return DeviceType::CpuEmulated;
        default:
            return DeviceType::CpuEmulated;
    }
}

int preference(DeviceType t) {
    switch (t) {
        case DeviceType::DiscreteGpu:
            return 0;
        case DeviceType::IntegratedGpu:
            return 1;
        case DeviceType::VirtualGpu:
            return 2;
        default:
            return 3;
    }
}

// Whether matmul_coopmat.comp can run: the extension, its feature, a 16x16x16 f16 shape with
// f32 accumulation at subgroup scope, 32-wide subgroups (the kernel's layout) and the features
// the SPIR-V declares (Float16, VulkanMemoryModel).
std::string coopmat_missing(VkInstance instance, VkPhysicalDevice pd,
                            const std::vector<VkExtensionProperties>& exts, uint32_t subgroup_size,
                            bool size_control_32, bool float16, bool memory_model) {
    if (!has_extension(exts, kCoopMatExtension)) return "no VK_KHR_cooperative_matrix";
    if (subgroup_size != 32 && !size_control_32)
        return "subgroups of " + std::to_string(subgroup_size) +
               " and no way to ask for 32, which the kernel needs";
    if (!float16 || !memory_model) return "no shaderFloat16 or vulkanMemoryModel";
    CoopMatFeatures cm;
    VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    feats.pNext = &cm;
    vkGetPhysicalDeviceFeatures2(pd, &feats);
    if (!cm.cooperativeMatrix) return "cooperativeMatrix feature off";
    auto get = reinterpret_cast<PFN_GetCoopMatProperties>(
        vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    if (!get) return "no vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR";
    uint32_t n = 0;
    if (get(pd, &n, nullptr) != VK_SUCCESS) return "cannot list cooperative matrix shapes";
    std::vector<CoopMatProperties> shapes(n);
    if (n && get(pd, &n, shapes.data()) != VK_SUCCESS)
        return "cannot list cooperative matrix shapes";
    for (const CoopMatProperties& s : shapes)
        if (s.MSize == 16 && s.NSize == 16 && s.KSize == 16 && s.AType == kCoopComponentF16 &&
            s.BType == kCoopComponentF16 && s.CType == kCoopComponentF32 &&
            s.ResultType == kCoopComponentF32 && s.scope == kCoopScopeSubgroup)
            return "";
    return "no 16x16x16 f16 -> f32 subgroup shape";
}

PhysicalDevice describe(VkInstance instance, VkPhysicalDevice pd) {
    PhysicalDevice d;
    d.handle = pd;

    uint32_t n_ext = 0;
    vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, nullptr);
    std::vector<VkExtensionProperties> exts(n_ext);
    vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, exts.data());
    d.memory_budget_ext = has_extension(exts, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    d.external_memory_host_ext = has_extension(exts, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    d.pipeline_executable_ext =
        has_extension(exts, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);

    VkPhysicalDeviceSubgroupProperties subgroup{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties m3{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    subgroup.pNext = &driver;
    driver.pNext = &m3;
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT host_import{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
    if (d.external_memory_host_ext) m3.pNext = &host_import;
    VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props.pNext = &subgroup;
    vkGetPhysicalDeviceProperties2(pd, &props);
    d.subgroup_size = subgroup.subgroupSize;
    d.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                            (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                            (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
    d.subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                         (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    d.max_shared_bytes = props.properties.limits.maxComputeSharedMemorySize;
    d.max_workgroup_invocations = props.properties.limits.maxComputeWorkGroupInvocations;
    d.max_buffer_size = props.properties.limits.maxStorageBufferRange;
    d.max_allocation_size = m3.maxMemoryAllocationSize;
    d.host_import_alignment = host_import.minImportedHostPointerAlignment;

    VkPhysicalDeviceShaderFloat16Int8Features f16{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR idot{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    const bool idot_ext = has_extension(exts, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    feats.pNext = &f16;
    if (idot_ext) f16.pNext = &idot;
    vkGetPhysicalDeviceFeatures2(pd, &feats);
    d.shader_float16 = f16.shaderFloat16;
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 feats12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    feats12.pNext = &f12;
    vkGetPhysicalDeviceFeatures2(pd, &feats12);
    // Subgroups of 32 on request (compute stage), for the cooperative-matrix kernel.
    if (has_extension(exts, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME)) {
        VkPhysicalDeviceSubgroupSizeControlFeaturesEXT ssf{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
        VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
        f2.pNext = &ssf;
        vkGetPhysicalDeviceFeatures2(pd, &f2);
        VkPhysicalDeviceSubgroupSizeControlPropertiesEXT ssp{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
        VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
        p2.pNext = &ssp;
        vkGetPhysicalDeviceProperties2(pd, &p2);
        d.subgroup_size_control = ssf.subgroupSizeControl && ssp.minSubgroupSize <= 32 &&
                                  ssp.maxSubgroupSize >= 32 &&
                                  (ssp.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
        d.full_subgroups = d.subgroup_size_control && ssf.computeFullSubgroups;
    }
    d.coopmat_why_not =
        coopmat_missing(instance, pd, exts, d.subgroup_size, d.subgroup_size_control,
                        d.shader_float16, f12.vulkanMemoryModel);
    d.coopmat_f16 = d.coopmat_why_not.empty();
    d.shader_int8_dot = idot_ext && idot.shaderIntegerDotProduct;
    if (d.shader_int8_dot) {
        VkPhysicalDeviceShaderIntegerDotProductPropertiesKHR idp{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES_KHR};
        VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
        p2.pNext = &idp;
        vkGetPhysicalDeviceProperties2(pd, &p2);
        d.int8_dot_accelerated = idp.integerDotProduct4x8BitPackedSignedAccelerated;
    }

    uint32_t n_q = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_q, nullptr);
    std::vector<VkQueueFamilyProperties> qs(n_q);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_q, qs.data());
    // Prefer a compute-only family (async compute) and fall back to any with compute.
    int best = -1;
    for (uint32_t i = 0; i < n_q; ++i) {
        if (!(qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (best < 0 || !(qs[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) best = static_cast<int>(i);
    }
    d.compute_queue_family = best < 0 ? 0 : static_cast<uint32_t>(best);
    if (best >= 0 && qs[best].timestampValidBits > 0)
        d.timestamp_period_ns = props.properties.limits.timestampPeriod;

    VkPhysicalDeviceMemoryProperties mp{};
    const HeapBudget budget = query_heap_budget(pd, d.memory_budget_ext, &mp);
    bool host_visible_local = false;
    for (uint32_t t = 0; t < mp.memoryTypeCount; ++t) {
        auto f = mp.memoryTypes[t].propertyFlags;
        if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
            host_visible_local = true;
    }
    auto& info = d.info;
    info.backend = "vulkan";
    info.name = props.properties.deviceName;
    info.driver = std::string(driver.driverName) + " " + driver.driverInfo;
    info.type = to_device_type(props.properties.deviceType);
    // Integrated GPUs and CPU drivers share host memory; a discrete GPU with a host-visible
    // device-local type only has resizable BAR, which is not unified memory.
    info.unified_memory = info.type == DeviceType::IntegratedGpu ||
                          info.type == DeviceType::CpuEmulated ||
                          (host_visible_local && info.type != DeviceType::DiscreteGpu);
    const UsableMemory usable = usable_memory(mp, budget, info.unified_memory);
    info.memory_total = usable.total;
    info.memory_free = usable.free;
    info.notes = d.coopmat_f16 ? "prefill on cooperative matrices (f16 x f16 -> f32)"
                               : "prefill without cooperative matrices: " + d.coopmat_why_not;
    if (const std::string pooled = pooled_heaps_note(mp, usable); !pooled.empty())
        info.notes += "; " + pooled;
    return d;
}

}  // namespace

HeapBudget query_heap_budget(VkPhysicalDevice pd, bool budget_ext,
                             VkPhysicalDeviceMemoryProperties* props) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 mem{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
    if (budget_ext) mem.pNext = &budget;
    vkGetPhysicalDeviceMemoryProperties2(pd, &mem);
    if (props) *props = mem.memoryProperties;
    return budget_ext ? heap_budget_of(budget) : heap_sizes_as_budget(mem.memoryProperties);
}

Instance::Instance() {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "tandem";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    VkResult r = vkCreateInstance(&ci, nullptr, &instance_);
    if (r != VK_SUCCESS)
        throw Error("vkCreateInstance failed (VkResult " + std::to_string(r) +
                    "): no Vulkan driver installed? (Debian: mesa-vulkan-drivers)");
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance_, &n, nullptr);
    std::vector<VkPhysicalDevice> pds(n);
    vkEnumeratePhysicalDevices(instance_, &n, pds.data());
    for (auto pd : pds) devices_.push_back(describe(instance_, pd));
    std::stable_sort(devices_.begin(), devices_.end(),
                     [](const PhysicalDevice& a, const PhysicalDevice& b) {
                         return preference(a.info.type) < preference(b.info.type);
                     });
    for (size_t i = 0; i < devices_.size(); ++i) devices_[i].info.index = static_cast<int>(i);
}

Instance::~Instance() {
    if (instance_) vkDestroyInstance(instance_, nullptr);
}

}  // namespace tandem::vk
