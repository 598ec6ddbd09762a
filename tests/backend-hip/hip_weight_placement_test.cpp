// The HIP backend's weight-placement probe (tandem/backend/weight_placement.h) on a GPU: weights
// used in place timed against device memory, and copied where in place reads clearly slower.
// Skipped without a HIP device.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "../backend-ops/op_references.h"
#include "hip_test_support.h"

namespace tandem::hip {
namespace {

// On a discrete GPU, weights forced in place are read over the bus, far slower than device
// memory: with TANDEM_HIP_HOST_WEIGHTS=auto the probe must measure that and copy them (repacked on
// the way), and the product must not change. TANDEM_HIP_HOST_WEIGHTS=1 keeps them in place
// without a probe (the path an APU takes when in place reads at device speed).
TEST(HipWeightPlacementGpu, ProbeCopiesWeightsReadOverTheBusAndTheProductHolds) {
    using namespace tandem::test;
    TANDEM_HIP_OR_SKIP(hip0);
    if (hip0->device().unified_memory)
        GTEST_SKIP() << "integrated GPU: in place may read at device speed here, so the probe's "
                        "choice is not known in advance";
    hip0.reset();
    // [4096 in, 16384 out] Q8_0: 68 MiB, past the probe's 64 MiB minimum.
    const int64_t n_in = 4096, n_out = 16384;
    const QuantWeight w(DType::Q8_0, {n_in, n_out, 1}, 4242);
    const auto x = random_floats(size_t(n_in), 17, -2.0f, 2.0f);
    const auto ref = ref_matmul(w, q8_activations(x), 1);
    for (const char* mode : {"1", "auto"}) {
        ::setenv("TANDEM_HIP_HOST_WEIGHTS", mode, 1);
        auto hip = hip_backend();
        ::unsetenv("TANDEM_HIP_HOST_WEIGHTS");
        ASSERT_TRUE(hip);
        testing::internal::CaptureStderr();
        const auto y = run_matmul(*hip, w, x, 1);
        const std::string log = testing::internal::GetCapturedStderr();
        std::printf("TANDEM_HIP_HOST_WEIGHTS=%s:\n%s", mode, log.c_str());
        EXPECT_LT(reported_nmse(std::string("in place mode ") + mode, y, ref), 1e-10) << mode;
        if (std::string(mode) == "auto") {
            EXPECT_NE(log.find("weights in place read at"), std::string::npos) << log;
            EXPECT_NE(log.find("copying them"), std::string::npos) << log;
        } else {
            EXPECT_EQ(log.find("read at"), std::string::npos) << log;
        }
    }
}

}  // namespace
}  // namespace tandem::hip
