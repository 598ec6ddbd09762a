#include "vk_pipelines.h"

#include <cstdio>

#include "tandem/common/error.h"
#include "vk_context.h"

namespace tandem::vk {

struct EmbeddedShader {
    std::string_view name;
    const uint32_t* words;
    size_t size_bytes;
};
const EmbeddedShader* embedded_shaders(size_t* n);  // embedded_shaders.cpp (generated)

Pipelines::Pipelines(VkDevice device, bool stats) : device_(device), stats_(stats) {
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
    VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    lci.pushConstantRangeCount = 1;
    lci.pPushConstantRanges = &range;
    check(vkCreatePipelineLayout(device_, &lci, nullptr, &layout_), "vkCreatePipelineLayout");
}

Pipelines::~Pipelines() {
    for (auto& [key, p] : pipelines_) vkDestroyPipeline(device_, p, nullptr);
    for (auto& [name, m] : modules_) vkDestroyShaderModule(device_, m, nullptr);
    if (layout_) vkDestroyPipelineLayout(device_, layout_, nullptr);
}

VkPipeline Pipelines::get(const std::string& shader, const std::vector<uint32_t>& spec) {
    auto key = std::make_pair(shader, spec);
    if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;

    VkShaderModule module = VK_NULL_HANDLE;
    if (auto it = modules_.find(shader); it != modules_.end()) {
        module = it->second;
    } else {
        size_t n = 0;
        const EmbeddedShader* all = embedded_shaders(&n);
        const EmbeddedShader* found = nullptr;
        for (size_t i = 0; i < n; ++i)
            if (all[i].name == shader) found = &all[i];
        if (!found) throw Error("vulkan: no embedded shader named '" + shader + "'");
        VkShaderModuleCreateInfo mci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
        mci.codeSize = found->size_bytes;
        mci.pCode = found->words;
        check(vkCreateShaderModule(device_, &mci, nullptr, &module), "vkCreateShaderModule");
        modules_[shader] = module;
    }

    std::vector<VkSpecializationMapEntry> entries(spec.size());
    for (size_t i = 0; i < spec.size(); ++i)
        entries[i] = {static_cast<uint32_t>(i), static_cast<uint32_t>(i * 4), 4};
    VkSpecializationInfo si{static_cast<uint32_t>(entries.size()), entries.data(), spec.size() * 4,
                            spec.data()};
    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module;
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = spec.empty() ? nullptr : &si;
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfoEXT size{
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO_EXT};
    if (auto it = subgroup_size_.find(shader); it != subgroup_size_.end()) {
        size.requiredSubgroupSize = it->second.first;
        ci.stage.pNext = &size;
        if (it->second.second)
            ci.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT;
    }
    ci.layout = layout_;
    if (stats_) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    VkPipeline p = VK_NULL_HANDLE;
    check(vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &ci, nullptr, &p),
          ("vkCreateComputePipelines(" + shader + ")").c_str());
    pipelines_[key] = p;
    if (stats_) print_stats(p, shader, spec);
    return p;
}

namespace {
// Vulkan's two-call query: the count, then the items (each with its sType). False where either
// call fails.
template <class T, class Fn, class... Args>
bool query_items(std::vector<T>& items, VkStructureType type, Fn fn, Args... args) {
    uint32_t n = 0;
    if (fn(args..., &n, nullptr) != VK_SUCCESS) return false;
    items.assign(n, T{type});
    if (fn(args..., &n, items.data()) != VK_SUCCESS) return false;
    items.resize(n);
    return true;
}
}  // namespace

// One line per executable of the pipeline: "vulkan pipeline NAME(SPEC) EXECUTABLE: STAT VALUE,
// ...", the statistics as the driver names them (NVIDIA: register count, local memory, ...).
void Pipelines::print_stats(VkPipeline p, const std::string& shader,
                            const std::vector<uint32_t>& spec) {
    auto props_of = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
        vkGetDeviceProcAddr(device_, "vkGetPipelineExecutablePropertiesKHR"));
    auto stats_of = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
        vkGetDeviceProcAddr(device_, "vkGetPipelineExecutableStatisticsKHR"));
    if (!props_of || !stats_of) return;
    std::string name = shader + "(";
    for (size_t i = 0; i < spec.size(); ++i) name += (i ? "," : "") + std::to_string(spec[i]);
    name += ")";
    VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
    info.pipeline = p;
    std::vector<VkPipelineExecutablePropertiesKHR> execs;
    if (!query_items(execs, VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR, props_of, device_,
                     &info))
        return;
    for (uint32_t e = 0; e < execs.size(); ++e) {
        VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
        ei.pipeline = p;
        ei.executableIndex = e;
        std::vector<VkPipelineExecutableStatisticKHR> st;
        if (!query_items(st, VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR, stats_of, device_,
                         &ei))
            continue;
        std::string line = "vulkan pipeline " + name + " " + execs[e].name + ":";
        for (size_t i = 0; i < st.size(); ++i) {
            std::string v;
            switch (st[i].format) {
                case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
                    v = st[i].value.b32 ? "yes" : "no";
                    break;
                case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
                    v = std::to_string(st[i].value.i64);
                    break;
                case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
                    v = std::to_string(st[i].value.u64);
                    break;
                default:
                    v = std::to_string(st[i].value.f64);
            }
            line += std::string(i ? ", " : " ") + st[i].name + " " + v;
        }
        std::fprintf(stderr, "%s\n", line.c_str());
    }
}

void Pipelines::require_subgroup_size(const std::string& shader, uint32_t size, bool full) {
    subgroup_size_[shader] = {size, full};
}

}  // namespace tandem::vk
