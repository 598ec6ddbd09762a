// Every kernel level (scalar, AVX2, AVX-512) of every weight type against a double-precision
// dot product of the dequantised weights (dequantisers checked bit for bit against gguf) with
// the original f32 activations, for several lengths including odd block counts.
//
// Tolerance: the activation quantisation error, bounded per element by half a q8 step
// (|w_i| * d_block / 2), plus the float accumulation error gamma_m * sum|w_i x_i| with m the
// longest chain of float operations (n for f32 types, blocks + 8 for the integer types).
#include <gtest/gtest.h>

#include <cmath>

#include "quant_test_util.h"
#include "tandem/common/error.h"
#include "tandem/quant/fp16.h"
#include "tandem/quant/quant.h"

namespace tandem::quant::test {
namespace {

const DType kTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,   DType::Q4_1,
                        DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K,   DType::Q3_K,
                        DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS};

std::vector<Isa> supported_isas() {
    std::vector<Isa> v;
    for (Isa i : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
        if (isa_supported(i)) v.push_back(i);
    return v;
}

// A weight row of type t: quantised from random values where we have a quantiser, else random
// bytes with sane f16 super-block scales (Q2_K, Q3_K, IQ4_NL, IQ4_XS).
std::vector<uint8_t> weight_row(DType t, int64_t n, uint32_t seed) {
    std::vector<uint8_t> row(row_bytes(t, static_cast<uint64_t>(n)));
    if (can_quantize(t)) {
        const auto x = random_row(n, seed);
        quantize_row(t, x.data(), row.data(), n);
        return row;
    }
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& b : row) b = static_cast<uint8_t>(byte(rng));
    const auto& tr = dtype_traits(t);
    const std::vector<int> f16_fields = t == DType::Q2_K   ? std::vector<int>{80, 82}
                                        : t == DType::Q3_K ? std::vector<int>{108}
                                                           : std::vector<int>{0};  // IQ4_NL, IQ4_XS
    std::uniform_real_distribution<float> scale(-0.1f, 0.1f);
    for (size_t b = 0; b < row.size() / tr.block_bytes; ++b)
        for (int off : f16_fields) {
            const uint16_t h = fp32_to_fp16(scale(rng));
            std::memcpy(&row[b * tr.block_bytes + off], &h, 2);
        }
    return row;
}

// Per element, the largest error quantising x to the activation format can make (half a step).
std::vector<double> act_error_bound(DType act, const std::vector<float>& x) {
    std::vector<double> e(x.size(), 0.0);
    if (act == DType::F32) return e;
    const size_t block = act == DType::Q8_K ? 256 : 32;
    for (size_t b = 0; b < x.size(); b += block) {
        double amax = 0;
        for (size_t i = b; i < b + block; ++i) amax = std::max(amax, std::fabs(double(x[i])));
        // Step amax/127; half a step, plus the f16 rounding of the stored scale (2^-11 relative
        // on every |q| <= 127, i.e. at most amax * 2^-11).
        const double bound = amax / 127 / 2 + amax * std::ldexp(1.0, -11);
        for (size_t i = b; i < b + block; ++i) e[i] = bound;
    }
    return e;
}

int64_t block_elems(DType t) {
    return dtype_traits(t).block_elems;
}

TEST(VecDot, EveryIsaMatchesDoubleReference) {
    const auto isas = supported_isas();
    uint32_t seed = 1;
    for (DType t : kTypes) {
        const int64_t b = std::max<int64_t>(block_elems(t), 32);
        for (int64_t blocks : {1, 3, 7, 8, 33}) {
            // Plain types take any length: odd ones exercise the SIMD tails.
            const bool plain = block_elems(t) == 1;
            const int64_t n = plain ? blocks * 31 + 6 : b == 32 ? blocks * 32 : blocks * 256;
            SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n));
            const auto w = weight_row(t, n, seed++);
            std::vector<float> wf(static_cast<size_t>(n));
            dequantize_row(t, w.data(), wf.data(), n);
            const auto x = random_row(n, seed++);
            Activations acts;
            acts.prepare(t, x.data(), n, 1);
            const auto err = act_error_bound(acts.format(), x);
            double ref = 0, abs_sum = 0, act_bound = 0;
            for (int64_t i = 0; i < n; ++i) {
                ref += double(wf[i]) * double(x[i]);
                abs_sum += std::fabs(double(wf[i]) * double(x[i]));
                act_bound += std::fabs(double(wf[i])) * err[i];
            }
            const double chain = acts.format() == DType::F32 ? double(n) : double(n / 32 + 8);
            const double u = std::ldexp(1.0, -24);
            // The weight side is exact; the *products* of float scales add a few roundings each.
            const double tol =
                act_bound + (chain * u / (1 - chain * u) + 8 * u) * abs_sum * 4 + 1e-30;
            for (Isa isa : isas) {
                const Kernels& k = kernels(t, isa);
                const float got = k.vec_dot(n, w.data(), acts.row(0));
                EXPECT_NEAR(got, ref, tol)
                    << isa_name(isa) << " (kernel from " << isa_name(k.isa) << ")";
            }
        }
    }
}

// The integer paths must agree with each other much more tightly than with f32 activations:
// they compute the same integer sums and differ only in float rounding order.
TEST(VecDot, IsasAgreeWithScalarOnQuantisedActivations) {
    const auto isas = supported_isas();
    uint32_t seed = 500;
    for (DType t : kTypes) {
        const int64_t n = block_elems(t) == 256 ? 256 * 5 : 32 * 45;
        SCOPED_TRACE(dtype_name(t));
        const auto w = weight_row(t, n, seed++);
        const auto x = random_row(n, seed++);
        Activations acts;
        acts.prepare(t, x.data(), n, 1);
        const float ref = kernels(t, Isa::Scalar).vec_dot(n, w.data(), acts.row(0));
        double abs_sum = 0;
        std::vector<float> wf(static_cast<size_t>(n));
        dequantize_row(t, w.data(), wf.data(), n);
        for (int64_t i = 0; i < n; ++i) abs_sum += std::fabs(double(wf[i]) * double(x[i]));
        for (Isa isa : isas)
            EXPECT_NEAR(kernels(t, isa).vec_dot(n, w.data(), acts.row(0)), ref, abs_sum * 2e-5)
                << isa_name(isa);
    }
}

TEST(VecDot, TileEqualsOneRowAtATime) {
    uint32_t seed = 900;
    for (DType t : kTypes) {
        const int64_t n = block_elems(t) == 256 ? 512 : block_elems(t) == 1 ? 101 : 96;
        const auto w = weight_row(t, n, seed++);
        const auto x = random_row(n * kMaxTokenTile, seed++);
        Activations acts;
        acts.prepare(t, x.data(), n, kMaxTokenTile);
        for (Isa isa : supported_isas()) {
            const Kernels& k = kernels(t, isa);
            for (int nt = 1; nt <= kMaxTokenTile; ++nt) {
                float out[kMaxTokenTile];
                k.vec_dot_tile(n, w.data(), acts.row(0), acts.row_stride(), nt, out);
                for (int j = 0; j < nt; ++j) {
                    const float one = k.vec_dot(n, w.data(), acts.row(j));
                    EXPECT_NEAR(out[j], one, 1e-5f * (std::fabs(one) + 1.f))
                        << dtype_name(t) << " " << isa_name(isa) << " nt=" << nt << " j=" << j;
                }
            }
        }
    }
}

TEST(VecDot, KernelTableReportsFormatsAndLevels) {
    EXPECT_EQ(act_type(DType::Q4_K), DType::Q8_K);
    EXPECT_EQ(act_type(DType::Q5_0), DType::Q8_0);
    EXPECT_EQ(act_type(DType::Q4_1), DType::Q8_1);
    EXPECT_EQ(act_type(DType::BF16), DType::F32);
    for (DType t : kTypes) {
        EXPECT_TRUE(can_matmul(t));
        for (Isa isa : supported_isas()) {
            const Kernels& k = kernels(t, isa);
            EXPECT_EQ(k.type, t);
            EXPECT_EQ(k.act, act_type(t));
            EXPECT_LE(static_cast<int>(k.isa), static_cast<int>(isa));
        }
    }
    // Every type has its own kernel at every level (no silent fallback to scalar).
    if (isa_supported(Isa::Avx512)) {
        for (DType t : kTypes) EXPECT_EQ(kernels(t, Isa::Avx512).isa, Isa::Avx512) << dtype_name(t);
    }
    if (isa_supported(Isa::Avx2)) {
        for (DType t : kTypes) EXPECT_EQ(kernels(t, Isa::Avx2).isa, Isa::Avx2) << dtype_name(t);
    }
    EXPECT_THROW(kernels(DType::IQ2_XXS, Isa::Scalar), Error);
    EXPECT_THROW(act_type(DType::I32), Error);
}

}  // namespace
}  // namespace tandem::quant::test
