// The prefill GEMM (AVX-512 panels of kGemmRows rows x token tiles, gemm_avx512.cpp) against the
// scalar kernels and a double-precision reference from the dequantised weights and activations,
// over shapes that leave partial panels, partial token tiles and row ranges that split panels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include "quant_test_util.h"
#include "tandem/quant/fp16.h"
#include "tandem/quant/quant.h"

namespace tandem::quant::test {
namespace {

// Weight rows of type t: quantised random rows, or (types without a quantiser) random blocks
// with a plausible f16 scale first.
std::vector<uint8_t> weight_rows(DType t, int64_t n_in, int64_t n_out, uint32_t seed) {
    const size_t rb = row_bytes(t, static_cast<uint64_t>(n_in));
    std::vector<uint8_t> w(rb * static_cast<size_t>(n_out));
    if (can_quantize(t)) {
        for (int64_t r = 0; r < n_out; ++r) {
            const auto row = random_row(n_in, seed + static_cast<uint32_t>(r));
            quantize_row(t, row.data(), w.data() + r * rb, n_in);
        }
        return w;
    }
    std::mt19937 rng(seed);
    for (auto& b : w) b = static_cast<uint8_t>(rng());
    const auto& tr = dtype_traits(t);
    std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
    for (size_t off = 0; off < w.size(); off += tr.block_bytes) {  // IQ4_NL: d first
        const uint16_t d = fp32_to_fp16(scale(rng));
        std::memcpy(w.data() + off, &d, 2);
    }
    return w;
}

// Token t of prepared activations as the values the integer kernels multiply with.
std::vector<double> act_values(const Activations& a, int64_t t) {
    std::vector<float> f(static_cast<size_t>(a.n_in()));
    dequantize_row(a.format(), a.row(t), f.data(), a.n_in());
    return {f.begin(), f.end()};
}

struct Shape {
    int64_t n_out, n_tokens;
};

TEST(Gemm, PanelsAndTokenTilesMatchScalarAndReference) {
    if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
    const DType types[] = {DType::Q4_0, DType::Q5_0, DType::Q8_0, DType::IQ4_NL,
                           DType::Q4_K, DType::Q5_K, DType::Q6_K};
    // Partial panels (1, 15, 17, 45 rows) and token counts around the tile of 8 (odd, 9..33), one
    // below kGemmMinTokens (row kernels) for contrast.
    const Shape shapes[] = {{1, 9}, {15, 4}, {17, 11}, {45, 33}, {33, 17}, {16, 3}, {40, 25}};
    uint32_t seed = 9000;
    for (DType t : types) {
        const int64_t n_in = dtype_traits(t).block_elems == 256 ? 768 : 352;  // odd block counts
        for (const Shape& s : shapes) {
            SCOPED_TRACE(std::string(dtype_name(t)) + " n_out " + std::to_string(s.n_out) +
                         " n_tokens " + std::to_string(s.n_tokens));
            const auto w = weight_rows(t, n_in, s.n_out, seed);
            seed += 100;
            const size_t rb = row_bytes(t, static_cast<uint64_t>(n_in));
            std::vector<float> wf(static_cast<size_t>(n_in * s.n_out));
            for (int64_t r = 0; r < s.n_out; ++r)
                dequantize_row(t, w.data() + r * rb, wf.data() + r * n_in, n_in);
            const auto x = random_row(n_in * s.n_tokens, seed++);
            Activations acts;
            acts.prepare(t, x.data(), n_in, s.n_tokens, Isa::Avx512);
            const int64_t y_stride = s.n_out + 3;  // the gaps stay untouched
            std::vector<float> y(static_cast<size_t>(y_stride * s.n_tokens), -777.f);
            std::vector<float> y_scalar(y.size(), -777.f);
            // Ranges that cut panels, as threads may.
            const int64_t cut1 = std::min<int64_t>(s.n_out, 5), cut2 = std::min(s.n_out, cut1 + 19);
            for (auto [b, e] :
                 {std::pair<int64_t, int64_t>{0, cut1}, {cut1, cut2}, {cut2, s.n_out}})
                matmul(t, w.data(), n_in, b, e, acts, y.data(), y_stride, Isa::Avx512);
            matmul(t, w.data(), n_in, 0, s.n_out, acts, y_scalar.data(), y_stride, Isa::Scalar);
            for (int64_t tok = 0; tok < s.n_tokens; ++tok) {
                const auto a = act_values(acts, tok);
                for (int64_t r = 0; r < s.n_out; ++r) {
                    double ref = 0, mag = 0;
                    for (int64_t i = 0; i < n_in; ++i) {
                        ref += double(wf[r * n_in + i]) * a[i];
                        mag += std::fabs(double(wf[r * n_in + i]) * a[i]);
                    }
                    // Exact integer sums per (sub-)block; float scale products and the sums
                    // over blocks round: 2e-5 of the magnitude.
                    const double tol = mag * 2e-5 + 1e-6;
                    const float got = y[tok * y_stride + r];
                    ASSERT_NEAR(got, ref, tol) << "token " << tok << " row " << r;
                    ASSERT_NEAR(got, y_scalar[tok * y_stride + r], 2 * tol)
                        << "token " << tok << " row " << r;
                }
                for (int64_t r = s.n_out; r < y_stride; ++r)
                    ASSERT_EQ(y[tok * y_stride + r], -777.f) << "wrote past the rows";
            }
        }
    }
}

// The one-token GEMV (gemv_avx512.cpp, Q4_0) against the row kernels of the scalar level and the
// double reference: block counts with and without a tail after the groups of 8, row ranges.
TEST(Gemv, Q4_0OneTokenMatchesScalarAndReference) {
    if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
    const DType t = DType::Q4_0;
    uint32_t seed = 7100;
    for (int64_t n_in : {int64_t(32), int64_t(256), int64_t(352), int64_t(4096), int64_t(4128)}) {
        const int64_t n_out = 37;
        SCOPED_TRACE("n_in " + std::to_string(n_in));
        const auto w = weight_rows(t, n_in, n_out, seed);
        seed += 100;
        const size_t rb = row_bytes(t, static_cast<uint64_t>(n_in));
        std::vector<float> wf(static_cast<size_t>(n_in * n_out));
        for (int64_t r = 0; r < n_out; ++r)
            dequantize_row(t, w.data() + r * rb, wf.data() + r * n_in, n_in);
        const auto xv = random_row(n_in, seed++);
        Activations acts, scalar_acts;
        acts.prepare(t, xv.data(), n_in, 1, Isa::Avx512);
        scalar_acts.prepare(t, xv.data(), n_in, 1, Isa::Scalar);
        // The GEMV's input (unless TANDEM_QUANT_GEMV=0 switched it off: then the row kernel runs).
        const char* gemv_env = std::getenv("TANDEM_QUANT_GEMV");
        if (!gemv_env || std::string(gemv_env) != "0") {
            ASSERT_NE(acts.block_sums(), nullptr) << "one token at AVX-512 must carry block sums";
        }
        std::vector<float> y(static_cast<size_t>(n_out + 2), -777.f), y_scalar(y.size(), -777.f);
        for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 11}, {11, 12}, {12, n_out}})
            matmul(t, w.data(), n_in, b, e, acts, y.data(), 1, Isa::Avx512);
        matmul(t, w.data(), n_in, 0, n_out, scalar_acts, y_scalar.data(), 1, Isa::Scalar);
        const auto a = act_values(acts, 0);
        for (int64_t r = 0; r < n_out; ++r) {
            double ref = 0, mag = 0;
            for (int64_t i = 0; i < n_in; ++i) {
                ref += double(wf[r * n_in + i]) * a[i];
                mag += std::fabs(double(wf[r * n_in + i]) * a[i]);
            }
            // The offset term comes off in float: still within 2e-5 of the magnitude.
            const double tol = mag * 2e-5 + 1e-6;
            ASSERT_NEAR(y[r], ref, tol) << "row " << r;
            ASSERT_NEAR(y[r], y_scalar[r], 2 * tol) << "row " << r;
        }
        ASSERT_EQ(y[n_out], -777.f) << "wrote past the rows";
    }
}

// Weights whose stored value is the type's offset (Q4_0 nibble 8, Q5_0 16, Q6_K 32, Q8_0 0) with
// scale 1 are exact zeros: the offsets the GEMM adds to make them unsigned must come off exactly,
// also with saturated activations (every q8 +127, block sums 32 * 127).
TEST(Gemm, OffsetsCancelExactly) {
    if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
    const uint16_t one = fp32_to_fp16(1.f);
    for (DType t : {DType::Q4_0, DType::Q5_0, DType::Q8_0, DType::Q6_K}) {
        const int64_t n_in = 512, n_out = 20;
        const auto& tr = dtype_traits(t);
        std::vector<uint8_t> w(row_bytes(t, n_in) * n_out);
        for (size_t off = 0; off < w.size(); off += tr.block_bytes) {
            uint8_t* b = w.data() + off;
            if (t == DType::Q4_0) {
                std::memcpy(b, &one, 2);
                std::memset(b + 2, 0x88, 16);
            } else if (t == DType::Q5_0) {  // nibble 0 with the fifth bit set: 16
                std::memcpy(b, &one, 2);
                std::memset(b + 2, 0xFF, 4);
                std::memset(b + 6, 0x00, 16);
            } else if (t == DType::Q8_0) {
                std::memcpy(b, &one, 2);
                std::memset(b + 2, 0, 32);
            } else {  // Q6_K: low nibbles 0, high bits 2 (32), scales 1..16
                std::memset(b, 0, 128);
                std::memset(b + 128, 0xAA, 64);
                for (int j = 0; j < 16; ++j) b[192 + j] = static_cast<uint8_t>(j + 1);
                std::memcpy(b + 208, &one, 2);
            }
        }
        std::vector<float> deq(static_cast<size_t>(n_in));
        dequantize_row(t, w.data(), deq.data(), n_in);
        for (float v : deq) ASSERT_EQ(v, 0.f) << dtype_name(t) << ": the test's blocks are not 0";
        for (int64_t n_tok : {int64_t(8), int64_t(1)}) {  // GEMM, and the one-token GEMV
            std::vector<float> x(static_cast<size_t>(n_in * n_tok), 3.f);
            std::vector<float> y(static_cast<size_t>(n_out * n_tok), -1.f);
            matmul(t, w.data(), n_in, 0, n_out, x.data(), n_tok, y.data(), n_out, Isa::Avx512);
            for (float v : y) ASSERT_EQ(v, 0.f) << dtype_name(t) << " tokens " << n_tok;
        }
    }
}

}  // namespace
}  // namespace tandem::quant::test
