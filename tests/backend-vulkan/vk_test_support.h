#pragma once
// Runs one-node graphs on the Vulkan backend and on the CPU backend (the reference) with the
// same inputs, using the backend-op harness's weights and graph builder.
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../backend-ops/op_harness.h"
#include "tandem/backend/registry.h"
#include "tandem/common/error.h"

namespace tandem::test {

// The Vulkan backend on device 0, or nullptr when the plugin or a driver is missing.
inline std::unique_ptr<Backend> vulkan_backend() {
    for (const auto& st : BackendRegistry::instance().backends())
        if (st.name == "vulkan" && st.available) return create_backend("vulkan", 0, {});
    return nullptr;
}

#define TANDEM_VULKAN_OR_SKIP(var)                                              \
    auto var = ::tandem::test::vulkan_backend();                                \
    if (!var)                                                                   \
    GTEST_SKIP() << "no Vulkan backend (plugin not built or no Vulkan driver; " \
                    "Debian: mesa-vulkan-drivers for lavapipe)"

// Builds the graph on `g` for backend `b` (weights are uploaded through g) and returns the
// output it fills.
using OpBuilder = std::function<void(OpGraph& g, Backend& b, std::vector<float>& out)>;

struct BothOutputs {
    std::vector<float> vulkan, cpu;
};

inline BothOutputs run_both(Backend& vk, const OpBuilder& build, int32_t n_past = 0) {
    auto cpu = make_backend("cpu", 2);
    BothOutputs r;
    OpGraph gv, gc;
    gv.io.n_past = gc.io.n_past = n_past;
    build(gv, vk, r.vulkan);
    build(gc, *cpu, r.cpu);
    gv.run(vk);
    gc.run(*cpu);
    return r;
}

}  // namespace tandem::test
