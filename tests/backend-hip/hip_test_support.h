#pragma once
// Shared by the HIP backend tests: the backend on device 0 (or a visible skip), and running the
// same one-node graphs on it and on the CPU backend. Every comparison prints its NMSE so a GPU
// run's log shows how close each op came, not only pass/fail.
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../backend-ops/op_harness.h"
#include "tandem/backend/registry.h"
#include "tandem/common/error.h"

namespace tandem::test {

// The HIP backend on device 0, or nullptr when the plugin or a device is missing.
inline std::unique_ptr<Backend> hip_backend() {
    for (const auto& st : BackendRegistry::instance().backends())
        if (st.name == "hip" && st.available) return create_backend("hip", 0, {});
    return nullptr;
}

#define TANDEM_HIP_OR_SKIP(var)               \
    auto var = ::tandem::test::hip_backend(); \
    if (!var)                                 \
    GTEST_SKIP() << "no HIP backend (plugin not built, or no ROCm/CUDA device on this host)"

using OpBuilder = std::function<void(OpGraph& g, Backend& b, std::vector<float>& out)>;

struct BothOutputs {
    std::vector<float> hip, cpu;
};

inline BothOutputs run_both(Backend& hip, const OpBuilder& build, int32_t n_past = 0) {
    auto cpu = make_backend("cpu", 2);
    BothOutputs r;
    OpGraph gh, gc;
    gh.io.n_past = gc.io.n_past = n_past;
    build(gh, hip, r.hip);
    build(gc, *cpu, r.cpu);
    gh.run(hip);
    gc.run(*cpu);
    return r;
}

}  // namespace tandem::test
