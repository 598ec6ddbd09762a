// Attention's row helpers at the default level (TANDEM_QUANT_ISA=scalar runs the fallbacks):
// weighted_rows_sum (the V pass for a group of query heads) against a double-precision sum over
// the dequantised rows, with strided rows and odd lengths; exp_shifted_sum against std::exp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "quant_test_util.h"
#include "tandem/quant/quant.h"

namespace tandem::quant::test {
namespace {

TEST(WeightedRows, MatchesDoubleReference) {
    uint32_t seed = 500;
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) {
        // 64 and 80: whole 64- and 16-column passes (AVX-512); 72 and 36: 8-wide columns and tails.
        for (int64_t n : {64, 80, 72, 36, 192}) {
            if (n % dtype_traits(t).block_elems != 0) continue;
            for (int n_acc : {1, 3, 4, 7}) {
                for (int64_t n_rows : {1, 13, 130}) {
                    SCOPED_TRACE(std::string(dtype_name(t)) + " n " + std::to_string(n) +
                                 " n_acc " + std::to_string(n_acc) + " n_rows " +
                                 std::to_string(n_rows));
                    // Rows inside a wider cache row (as one KV head of several).
                    const size_t rb = row_bytes(t, static_cast<uint64_t>(n)), stride = 3 * rb;
                    std::vector<uint8_t> rows(stride * static_cast<size_t>(n_rows));
                    std::vector<float> deq(static_cast<size_t>(n * n_rows));
                    for (int64_t j = 0; j < n_rows; ++j) {
                        const auto x = random_row(n, seed++);
                        quantize_row(t, x.data(), rows.data() + j * stride + rb, n);
                        dequantize_row(t, rows.data() + j * stride + rb, deq.data() + j * n, n);
                    }
                    const int64_t w_stride = n_rows + 2;
                    auto w = random_row(w_stride * n_acc, seed++);
                    std::vector<float> out(static_cast<size_t>(n_acc * n), -1.f);
                    weighted_rows_sum(t, rows.data() + rb, stride, n_rows, w.data(), w_stride,
                                      n_acc, out.data(), n);
                    for (int k = 0; k < n_acc; ++k)
                        for (int64_t i = 0; i < n; ++i) {
                            double ref = 0, mag = 0;
                            for (int64_t j = 0; j < n_rows; ++j) {
                                const double p = double(w[k * w_stride + j]) * deq[j * n + i];
                                ref += p;
                                mag += std::fabs(p);
                            }
                            // Float sums of n_rows products.
                            ASSERT_NEAR(out[k * n + i], ref, mag * 1e-6 * (1 + n_rows / 16) + 1e-30)
                                << "sum " << k << " element " << i;
                        }
                }
            }
        }
    }
}

// Softmax's exponentials: within 2 ulp of std::exp where the result is normal, 0 or tiny where
// it underflows; the sum matches a double sum; every length (masked tails).
TEST(ExpShiftedSum, MatchesStdExp) {
    for (int64_t n : {1, 15, 16, 17, 100, 1000}) {
        std::vector<float> x(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j)  // from the shift down to well past underflow
            x[j] = 3.0f -
                   110.0f * static_cast<float>(j) / static_cast<float>(std::max<int64_t>(n - 1, 1));
        const auto in = x;
        const float sum = exp_shifted_sum(x.data(), n, 3.0f);
        double ref_sum = 0;
        for (int64_t j = 0; j < n; ++j) {
            const float ref = std::exp(in[j] - 3.0f);
            ref_sum += ref;
            if (ref >= 1.2e-38f)
                ASSERT_NEAR(x[j], ref, ref * 2.4e-7) << "n " << n << " x " << in[j];
            else
                ASSERT_NEAR(x[j], ref, 1.2e-38f) << "n " << n << " x " << in[j];
        }
        EXPECT_NEAR(sum, ref_sum, ref_sum * 1e-6) << "n " << n;
    }
}

}  // namespace
}  // namespace tandem::quant::test
