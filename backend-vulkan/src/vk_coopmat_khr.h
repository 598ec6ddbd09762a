#pragma once
// VK_KHR_cooperative_matrix, declared here because Debian 12's Vulkan headers (1.3.239) predate
// it (1.3.255). Values and layouts are the registry's; a newer vulkan_core.h defines the same
// things under the VK_ names, so ours keep a prefix of their own.
#include <vulkan/vulkan.h>

namespace tandem::vk {

constexpr const char* kCoopMatExtension = "VK_KHR_cooperative_matrix";
constexpr VkStructureType kStypeCoopMatFeatures = VkStructureType(1000506000);
constexpr VkStructureType kStypeCoopMatProperties = VkStructureType(1000506001);
constexpr uint32_t kCoopComponentF16 = 0, kCoopComponentF32 = 1;  // VkComponentTypeKHR
constexpr uint32_t kCoopScopeSubgroup = 3;                        // VkScopeKHR

struct CoopMatFeatures {  // VkPhysicalDeviceCooperativeMatrixFeaturesKHR
    VkStructureType sType = kStypeCoopMatFeatures;
    void* pNext = nullptr;
    VkBool32 cooperativeMatrix = VK_FALSE;
    VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};

struct CoopMatProperties {  // VkCooperativeMatrixPropertiesKHR
    VkStructureType sType = kStypeCoopMatProperties;
    void* pNext = nullptr;
    uint32_t MSize = 0, NSize = 0, KSize = 0;
    uint32_t AType = 0, BType = 0, CType = 0, ResultType = 0;  // VkComponentTypeKHR
    VkBool32 saturatingAccumulation = VK_FALSE;
    uint32_t scope = 0;  // VkScopeKHR
};

using PFN_GetCoopMatProperties = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*,
                                                      CoopMatProperties*);

}  // namespace tandem::vk
