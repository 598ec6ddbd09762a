// weighted_rows_sum (attention's V pass for a group of query heads) against a double-precision
// sum over the dequantised rows at the default level (TANDEM_QUANT_ISA=scalar runs the fallback),
// with strided rows and odd lengths.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tandem::quant::test
