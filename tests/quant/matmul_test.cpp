// matmul over row ranges and token tiles against a double-precision reference built from the
// dequantised weights (checked against gguf) and the activations as quantised; plus the
// activation quantisers of every level against each other, and the errors bad input gets.
#include <gtest/gtest.h>

#include <cmath>

#include "quant_test_util.h"
#include "tandem/common/error.h"
#include "tandem/quant/fp16.h"
#include "tandem/quant/quant.h"

namespace tandem::quant::test {
namespace {

std::vector<Isa> supported_isas() {
    std::vector<Isa> v;
    for (Isa i : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
        if (isa_supported(i)) v.push_back(i);
    return v;
}

// Dequantised activation row t (what the integer kernels actually multiply with).
std::vector<double> act_values(const Activations& a, int64_t t) {
    const int64_t n = a.n_in();
    std::vector<double> v(static_cast<size_t>(n));
    std::vector<float> f(static_cast<size_t>(n));
    if (a.format() == DType::F32) {
        std::memcpy(f.data(), a.row(t), static_cast<size_t>(n) * 4);
    } else if (a.format() == DType::Q8_1) {
        // q8_1 is q8_0 with an extra f16 per block: d, s, qs[32].
        const auto* b = static_cast<const uint8_t*>(a.row(t));
        for (int64_t i = 0; i < n / 32; ++i) {
            uint8_t q80[34];
            std::memcpy(q80, b + i * 36, 2);
            std::memcpy(q80 + 2, b + i * 36 + 4, 32);
            dequantize_row(DType::Q8_0, q80, f.data() + i * 32, 32);
        }
    } else {
        dequantize_row(a.format(), a.row(t), f.data(), n);
    }
    for (int64_t i = 0; i < n; ++i) v[i] = f[i];
    return v;
}

TEST(Matmul, RowRangesAndTokenTilesMatchReference) {
    const DType types[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,
                           DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                           DType::Q4_K, DType::Q5_K, DType::Q6_K};
    uint32_t seed = 3000;
    for (DType t : types) {
        const int64_t n_in = dtype_traits(t).block_elems == 256 ? 512 : 320;
        const int64_t n_out = 37, n_tokens = 19;  // 19 tokens: two full tiles of 8 and one of 3
        const size_t rb = row_bytes(t, static_cast<uint64_t>(n_in));
        std::vector<uint8_t> w(rb * n_out);
        std::vector<float> wf(static_cast<size_t>(n_in * n_out));
        for (int64_t r = 0; r < n_out; ++r) {
            const auto row = random_row(n_in, seed++);
            quantize_row(t, row.data(), w.data() + r * rb, n_in);
            dequantize_row(t, w.data() + r * rb, wf.data() + r * n_in, n_in);
        }
        const auto x = random_row(n_in * n_tokens, seed++);
        for (Isa isa : supported_isas()) {
            SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::string(isa_name(isa)));
            Activations acts;
            acts.prepare(t, x.data(), n_in, n_tokens, isa);
            const int64_t y_stride = n_out + 5;  // gaps between token rows stay untouched
            std::vector<float> y(static_cast<size_t>(y_stride * n_tokens), -12345.f);
            // Three ranges, as three threads would split the rows.
            for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 11}, {11, 12}, {12, n_out}})
                matmul(t, w.data(), n_in, b, e, acts, y.data(), y_stride, isa);
            for (int64_t tok = 0; tok < n_tokens; ++tok) {
                const auto a = act_values(acts, tok);
                for (int64_t r = 0; r < n_out; ++r) {
                    double ref = 0, mag = 0;
                    for (int64_t i = 0; i < n_in; ++i) {
                        ref += double(wf[r * n_in + i]) * a[i];
                        mag += std::fabs(double(wf[r * n_in + i]) * a[i]);
                    }
                    // Exact integer sums; only float scale products and sums round (2e-5 of
                    // the magnitude covers them). Q4_1/Q5_1 also use the q8_1 block sum s =
                    // d * sum(q) with the unrounded d, then rounded to f16, while the reference
                    // uses the f16 d: two f16 roundings, |m| * |s| * 2^-10 per block.
                    double tol = mag * 2e-5 + 1e-6;
                    if (acts.format() == DType::Q8_1) {
                        for (int64_t blk = 0; blk < n_in / 32; ++blk) {
                            uint16_t m16;
                            std::memcpy(
                                &m16, w.data() + r * rb + blk * dtype_traits(t).block_bytes + 2, 2);
                            double s = 0;
                            for (int64_t i = blk * 32; i < blk * 32 + 32; ++i) s += a[i];
                            tol += std::fabs(fp16_to_fp32(m16) * s) * std::ldexp(1.0, -10);
                        }
                    }
                    ASSERT_NEAR(y[tok * y_stride + r], ref, tol) << "token " << tok << " row " << r;
                }
                for (int64_t r = n_out; r < y_stride; ++r)
                    ASSERT_EQ(y[tok * y_stride + r], -12345.f) << "wrote past the row range";
            }
        }
    }
}

TEST(Matmul, ConvenienceOverloadEqualsPreparedPath) {
    const int64_t n_in = 256, n_out = 8, n_tokens = 3;
    std::vector<uint8_t> w(row_bytes(DType::Q4_K, n_in) * n_out);
    for (int64_t r = 0; r < n_out; ++r) {
        const auto row = random_row(n_in, static_cast<uint32_t>(r));
        quantize_row(DType::Q4_K, row.data(), w.data() + r * row_bytes(DType::Q4_K, n_in), n_in);
    }
    const auto x = random_row(n_in * n_tokens, 99);
    std::vector<float> y1(n_out * n_tokens), y2(n_out * n_tokens);
    matmul(DType::Q4_K, w.data(), n_in, 0, n_out, x.data(), n_tokens, y1.data(), n_out);
    Activations acts;
    acts.prepare(DType::Q4_K, x.data(), n_in, n_tokens);
    matmul(DType::Q4_K, w.data(), n_in, 0, n_out, acts, y2.data(), n_out);
    EXPECT_EQ(y1, y2);
}

TEST(Matmul, ActivationsReuseTheirBufferAcrossShapes) {
    Activations acts;
    const auto big = random_row(1024 * 4, 1);
    acts.prepare(DType::Q8_0, big.data(), 1024, 4);
    EXPECT_EQ(acts.format(), DType::Q8_0);
    EXPECT_EQ(acts.row_stride(), row_bytes(DType::Q8_0, 1024));
    const auto small = random_row(64, 2);
    acts.prepare(DType::Q6_K, small.data(), 64 * 4, 0);  // zero tokens: valid, nothing to do
    EXPECT_EQ(acts.n_tokens(), 0);
    acts.prepare(DType::Q8_0, small.data(), 64, 1);
    std::vector<uint8_t> expect(row_bytes(DType::Q8_0, 64));
    quantize_row_q8_0(small.data(), expect.data(), 64);
    EXPECT_EQ(std::memcmp(acts.row(0), expect.data(), expect.size()), 0);
    acts.prepare(DType::F16, small.data(), 64, 1);
    EXPECT_EQ(acts.row(0), static_cast<const void*>(small.data()));  // f32 is not copied
}

// Every level's activation quantiser writes ggml's reference bytes, ties included (values that
// land exactly on .5 steps are where roundf and round-to-even differ).
TEST(Matmul, ActivationQuantisersOfEveryLevelAgree) {
    std::vector<float> x = random_row(256 * 12, 7);
    for (int j = 0; j < 256; ++j) x.push_back(static_cast<float>(j % 64 - 32) * 0.5f);  // ties
    for (int j = 0; j < 256; ++j) x.push_back(j == 100 ? -3.f : (j == 200 ? 3.f : 0.f));
    for (int j = 0; j < 256; ++j) x.push_back(0.f);
    const auto n = static_cast<int64_t>(x.size());
    for (DType fmt : {DType::Q8_0, DType::Q8_1, DType::Q8_K}) {
        std::vector<uint8_t> ref(row_bytes(fmt, n));
        quantize_act_row(fmt, x.data(), ref.data(), n, Isa::Scalar);
        for (Isa isa : supported_isas()) {
            std::vector<uint8_t> got(ref.size());
            quantize_act_row(fmt, x.data(), got.data(), n, isa);
            EXPECT_EQ(got, ref) << dtype_name(fmt) << " " << isa_name(isa);
        }
    }
    // The q8_K of the +-3 block takes its sign from the first largest element (-3 at index 100).
    std::vector<uint8_t> q(row_bytes(DType::Q8_K, 256));
    quantize_act_row(DType::Q8_K, x.data() + 256 * 13, q.data(), 256, default_isa());
    float d;
    std::memcpy(&d, q.data(), 4);
    EXPECT_FLOAT_EQ(d, 1 / (-127.f / -3.f));
    EXPECT_EQ(static_cast<int8_t>(q[4 + 100]), -127);
    EXPECT_EQ(static_cast<int8_t>(q[4 + 200]), 127);
}

TEST(Matmul, AddScaledRowMatchesDequantisedReference) {
    uint32_t seed = 70;
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K, DType::Q6_K}) {
        for (int64_t n : {256, 1280, 2560}) {
            const int64_t len = dtype_traits(t).block_elems == 1 ? n + 37 : n;  // odd tails
            const auto x = random_row(len, seed++);
            std::vector<uint8_t> row(row_bytes(t, static_cast<uint64_t>(len)));
            quantize_row(t, x.data(), row.data(), len);
            std::vector<float> deq(static_cast<size_t>(len));
            dequantize_row(t, row.data(), deq.data(), len);
            auto acc = random_row(len, seed++);
            const auto before = acc;
            const float w = -0.37f;
            add_scaled_row(t, row.data(), w, acc.data(), len);
            for (int64_t i = 0; i < len; ++i) {
                // One multiply and one add (or one FMA) in float.
                const double ref = double(before[i]) + double(w) * double(deq[i]);
                ASSERT_NEAR(acc[i], ref, (std::fabs(ref) + std::fabs(w * deq[i])) * 1.2e-7)
                    << dtype_name(t) << " n=" << len << " i=" << i;
            }
        }
    }
}

TEST(Matmul, BadInputGetsClearErrors) {
    std::vector<float> x(300, 1.f);
    Activations acts;
    // Row length not a multiple of the activation block.
    try {
        acts.prepare(DType::Q4_K, x.data(), 300, 1);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("q4_k"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("300"), std::string::npos) << e.what();
    }
    EXPECT_THROW(acts.prepare(DType::IQ2_XXS, x.data(), 256, 1), Error);
    // Activations prepared for another type or length.
    acts.prepare(DType::Q8_0, x.data(), 256, 1);
    std::vector<uint8_t> w(row_bytes(DType::Q4_K, 256));
    std::vector<float> y(1);
    EXPECT_THROW(matmul(DType::Q4_K, w.data(), 256, 0, 1, acts, y.data(), 1), Error);
    acts.prepare(DType::Q4_K, x.data(), 256, 1);
    EXPECT_THROW(matmul(DType::Q4_K, w.data(), 512, 0, 1, acts, y.data(), 1), Error);
    EXPECT_THROW(matmul(DType::Q4_K, w.data(), 256, 2, 1, acts, y.data(), 1), Error);
    // Row functions.
    std::vector<float> out(64);
    EXPECT_THROW(dequantize_row(DType::Q4_0, w.data(), out.data(), 33), Error);
    EXPECT_THROW(dequantize_row(DType::IQ1_S, w.data(), out.data(), 256), Error);
    EXPECT_THROW(quantize_row(DType::Q2_K, x.data(), w.data(), 256), Error);
    EXPECT_THROW(quantize_row(static_cast<DType>(999), x.data(), w.data(), 32), Error);
}

}  // namespace
}  // namespace tandem::quant::test
