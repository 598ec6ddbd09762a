// The Vulkan matmul kernels on shapes that cross their internal boundaries, for every weight type:
// matvec (activation chunks of 64 groups, 8 rows per workgroup, 2- or 4-token tiles) and the 64x64
// tiled prefill kernel (row and token tails), against a double-precision sum over the dequantised
// weights and against the CPU backend. Prints one NMSE table row per case (the GPU-run log
// keeps it). Also: other matvec specialisations (TANDEM_VK_MATVEC), device copy bandwidth, and
// the per-op GPU time table of TANDEM_VK_PROFILE=1.
#include <cstdio>
#include <cstdlib>

#include "vk_test_support.h"

namespace tandem::test {
namespace {

const DType kTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,
                        DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                        DType::Q4_K, DType::Q5_K, DType::Q6_K};

std::vector<double> exact_matmul(const QuantWeight& w, const std::vector<float>& x, int64_t T) {
    const int64_t n_in = w.ne[0], n_out = w.ne[1];
    std::vector<double> y(static_cast<size_t>(T * n_out));
    for (int64_t t = 0; t < T; ++t)
        for (int64_t o = 0; o < n_out; ++o) {
            double s = 0;
            for (int64_t i = 0; i < n_in; ++i)
                s += double(w.values[o * n_in + i]) * x[t * n_in + i];
            y[t * n_out + o] = s;
        }
    return y;
}

// Quantised weights against f32 activations: the kernels' float sums differ from the double
// reference by rounding only. The CPU backend quantises activations to q8 for integer types.
double cpu_tolerance(DType t) {
    return t == DType::F32 ? 1e-10 : (t == DType::F16 || t == DType::BF16) ? 1e-8 : 2e-4;
}

struct Shape {
    int64_t n_in, n_out, T;
    const char* kernel;
};

void check_shapes(Backend& vk, const std::vector<Shape>& shapes, const char* variant) {
    for (DType t : kTypes) {
        for (const Shape& s : shapes) {
            if (s.n_in % dtype_traits(t).block_elems) continue;
            QuantWeight w(t, {s.n_in, s.n_out, 1}, uint32_t(s.n_out * 13 + s.T));
            auto x = random_floats(size_t(s.n_in * s.T), uint32_t(s.T + 5));
            auto r = run_both(vk, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
                g.node(Op::MatMul, g.output(out, s.n_out, s.T),
                       {g.weight(b, w), g.input(x.data(), s.n_in, s.T)});
            });
            const double e_exact = nmse(r.vulkan, exact_matmul(w, x, s.T));
            const double e_cpu = nmse(r.vulkan, as_double(r.cpu));
            std::printf("| %s | %s | %s | %lld x %lld | T=%lld | %.2e | %.2e |\n", variant,
                        s.kernel, std::string(dtype_name(t)).c_str(),
                        static_cast<long long>(s.n_out), static_cast<long long>(s.n_in),
                        static_cast<long long>(s.T), e_exact, e_cpu);
            EXPECT_LT(e_exact, 1e-9) << variant << " " << dtype_name(t) << " " << s.n_in << "x"
                                     << s.n_out << " T=" << s.T;
            EXPECT_LT(e_cpu, cpu_tolerance(t)) << variant << " " << dtype_name(t) << " " << s.n_in
                                               << "x" << s.n_out << " T=" << s.T;
        }
    }
}

void print_header() {
    std::printf(
        "| variant | kernel | type | rows x n_in | tokens | NMSE vs exact | NMSE vs cpu |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
}

// Restores an environment variable when the test ends.
struct ScopedEnv {
    std::string name;
    ScopedEnv(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
    ~ScopedEnv() { unsetenv(name.c_str()); }
};

TEST(VulkanMatmulKernels, MatvecAndTiledEveryType) {
    TANDEM_VULKAN_OR_SKIP(vk);
    print_header();
    check_shapes(*vk,
                 {{2304, 67, 1, "matvec"},  // 2 activation chunks, the second partial; odd rows
                  {2304, 5, 6, "matvec"},   // two 4-token tiles, the second partial
                  {256, 1, 3, "matvec"},    // one row, one partial chunk
                  {96, 9, 2, "matvec"},     // f32/f16/bf16 only: under a chunk
                  {100, 7, 1, "matvec"},    // f32/f16/bf16 rows of any length
                  {100, 7, 12, "matvec"},   // ... also for many tokens (no tiled kernel)
                  {512, 130, 70, "tiled"},  // row tail (130 = 2x64 + 2), token tail (70)
                  {256, 64, 9, "tiled"}},   // the smallest token count that tiles
                 "default");
}

TEST(VulkanMatmulKernels, OtherMatvecSpecialisations) {
    for (const char* mv : {"64,4", "64,1", "32,32"}) {
        ScopedEnv env("TANDEM_VK_MATVEC", mv);
        ScopedEnv no_tiled("TANDEM_VK_TILED", "0");
        TANDEM_VULKAN_OR_SKIP(vk);
        check_shapes(*vk, {{2304, 67, 1, "matvec"}, {512, 33, 11, "matvec"}},
                     (std::string("matvec ") + mv).c_str());
    }
}

TEST(VulkanMatmulKernels, CopyBandwidthIsMeasured) {
    TANDEM_VULKAN_OR_SKIP(vk);
    const double bw = vk->copy_bandwidth();
    std::printf("vulkan copy bandwidth: %.1f GB/s on %s\n", bw / 1e9, vk->device().name.c_str());
    // Any real device copies faster than 100 MB/s and slower than 100 TB/s.
    EXPECT_GT(bw, 1e8);
    EXPECT_LT(bw, 1e14);
    EXPECT_EQ(vk->copy_bandwidth(), bw);  // measured once
}

TEST(VulkanMatmulKernels, ProfileModePrintsGpuTimePerOp) {
    ScopedEnv env("TANDEM_VK_PROFILE", "1");
    TANDEM_VULKAN_OR_SKIP(vk);
    QuantWeight w(DType::Q4_0, {256, 40, 1}, 1);
    auto x = random_floats(256 * 2, 2);
    OpGraph g;
    std::vector<float> out, out2;
    TensorId mm = g.g.activation("h", 40, 2);
    g.node(Op::MatMul, mm, {g.weight(*vk, w), g.input(x.data(), 256, 2)});
    g.node(Op::Scale, g.output(out, 40, 2), {mm}, {0, 0, 0, 0}, {2.0f, 0});
    testing::internal::CaptureStderr();
    g.run(*vk);
    vk.reset();  // the table is printed when the backend goes
    const std::string err = testing::internal::GetCapturedStderr();
    if (err.find("no timestamps") != std::string::npos)
        GTEST_SKIP() << "this device's compute queue has no timestamps";
    EXPECT_NE(err.find("| mat_mul q4_0 [256 -> 40] T>1 matvec | 1 |"), std::string::npos) << err;
    EXPECT_NE(err.find("| scale | 1 |"), std::string::npos) << err;
    EXPECT_NE(err.find("CPU recording per step"), std::string::npos) << err;
}

}  // namespace
}  // namespace tandem::test

namespace tandem::test {
namespace {

// TANDEM_VK_IMPORT=1: weights wrapped in place (VK_EXT_external_memory_host) where the device
// allows it (lavapipe does), at an offset that is not page-aligned; the results must not change.
TEST(VulkanMatmulKernels, WeightsImportedInPlace) {
    ScopedEnv env("TANDEM_VK_IMPORT", "1");
    TANDEM_VULKAN_OR_SKIP(vk);
    QuantWeight w(DType::Q6_K, {512, 37, 1}, 21);
    auto x = random_floats(512 * 3, 22);
    auto r = run_both(*vk, [&](OpGraph& g, Backend& b, std::vector<float>& out) {
        g.node(Op::MatMul, g.output(out, 37, 3), {g.weight(b, w), g.input(x.data(), 512, 3)});
    });
    EXPECT_LT(nmse(r.vulkan, exact_matmul(w, x, 3)), 1e-9);
    if (vk->weight_bytes() != 0)
        GTEST_SKIP() << "this device copied the weight (no VK_EXT_external_memory_host import)";
}

}  // namespace
}  // namespace tandem::test
