#pragma once
// Compute pipelines made from the embedded SPIR-V on first use, one per (shader, specialisation
// constants) pair, and kept for the life of the device. Every shader takes its buffers as device
// addresses in push constants, so all pipelines share one layout with no descriptor sets.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tandem::vk {

inline constexpr uint32_t kPushConstantBytes = 128;  // the minimum every device guarantees

class Pipelines {
  public:
    // stats: each pipeline made is printed with the driver's statistics of its code (registers,
    // spills, shared memory: VK_KHR_pipeline_executable_properties, enabled on the device).
    explicit Pipelines(VkDevice device, bool stats = false);
    ~Pipelines();
    Pipelines(const Pipelines&) = delete;
    Pipelines& operator=(const Pipelines&) = delete;

    // spec[i] is specialisation constant id i (uint32).
    VkPipeline get(const std::string& shader, const std::vector<uint32_t>& spec = {});
    VkPipelineLayout layout() const { return layout_; }
    // Pipelines of `shader` made from now on run in subgroups of `size` (VK_EXT_subgroup_size_
    // control, enabled at device creation), all of them full when `full` (computeFullSubgroups).
    void require_subgroup_size(const std::string& shader, uint32_t size, bool full);

  private:
    void print_stats(VkPipeline p, const std::string& shader, const std::vector<uint32_t>& spec);

    VkDevice device_;
    bool stats_ = false;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    std::map<std::string, VkShaderModule> modules_;
    std::map<std::pair<std::string, std::vector<uint32_t>>, VkPipeline> pipelines_;
    std::map<std::string, std::pair<uint32_t, bool>> subgroup_size_;  // shader -> size, full
};

}  // namespace tandem::vk
