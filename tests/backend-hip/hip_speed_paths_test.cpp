// The HIP backend's decode speed paths against independent references:
// - the int8-activation matvec (Q4_0 Q8_0 Q4_K Q5_K Q6_K, 1-8 tokens, odd row counts, long and
//   short rows) against (a) a double sum over the dequantised weights and the activations
//   quantised here the way the kernel is specified (d = max|x| / 127 in float, q = round(x / d):
//   only float rounding remains, so the bound is tight) and (b) the exact f32 product (the
//   activation rounding, bounded like the CPU backend's q8 path) and the CPU backend (printed);
// - the quantised input reused by consecutive matmuls of one input and redone after it changes;
// - TANDEM_HIP_Q8=0 going back to the f32-activation kernel (exact);
// - a GatedAct (SiLU, GELU) feeding the down projection leaving its q8 activations itself;
// - an RMSNorm feeding a matmul leaving the q8 activations itself (the same as quantising its
//   output);
// - the vectorised RMSNorm on model-sized rows (all in registers, longer rows re-read, per-head
//   groups) against a double formula;
// - prefill matmuls on the matrix units against a double sum over f16-rounded inputs, split over
//   their inputs for short prompts;
// - prefill attention in chunks replayed while n_past moves, on the tiled flash kernel and with
//   TANDEM_HIP_FLASH=0 on the one-block-per-(token, head) kernel, against a double reference
//   and the CPU backend.
// The GPU cases skip without a HIP device; the item code of the q8 matvec (hip_q8_dot.h) also
// runs on the host here, against the same reference, so index slips show up without a GPU.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "../backend-ops/fused_path_checks.h"
#include "hip_test_support.h"
#include "tandem/backend/weight_repack.h"

// Plain C++ stand-ins for the device names hip_q8_dot.h uses (dot4 takes its plain-sum branch).
#define __device__
#define __host__
struct uint2 {
    unsigned x, y;
};
struct uint4 {
    unsigned x, y, z, w;
};
struct float2 {
    float x, y;
};
struct int4 {
    int x, y, z, w;
};
struct float4 {
    float x, y, z, w;
};
inline float __uint_as_float(unsigned u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline unsigned __float_as_uint(float f) {
    unsigned u;
    std::memcpy(&u, &f, 4);
    return u;
}
#include "../../backend-hip/kernels/hip_q8_dot.h"
#undef __device__
#undef __host__

namespace tandem::test {
namespace {

const std::vector<DType> kQ8Types = {DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q5_K,
                                     DType::Q6_K};

// The matvec's items (D: the dense kernels' by default) run on the host over every row: out[t, o]
// for T <= 8 tokens; `bytes`: the weight in the layout T reads (w.bytes unless repacked).
template <DType T, class D = hip::Q8Dot<T>>
std::vector<float> host_items_matvec(const QuantWeight& w, const std::vector<float>& x,
                                     int64_t n_tok, const uint8_t* bytes = nullptr) {
    const int64_t n_in = w.ne[0], n_out = w.ne[1];
    // The activations as k_quantize_q8 lays them out: int8 values (hip_q8_layout.h), (d, s)
    // per 32.
    std::vector<int4> q(x.size() / 16);
    std::vector<float2> ds(x.size() / 32);
    for (size_t b = 0; b < x.size(); b += 32) {
        float amax = 0.0f;
        for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float d = amax / 127.0f;
        int sum = 0;
        for (size_t i = b; i < b + 32; ++i) {
            const auto v = int8_t(amax > 0.0f ? std::nearbyint(x[i] / d) : 0.0f);
            reinterpret_cast<int8_t*>(q.data())[hip::q8_byte_offset(int64_t(i))] = v;
            sum += v;
        }
        ds[b / 32] = {d, d * float(sum)};
    }
    hip::Act act[8];
    for (int t = 0; t < 8; ++t) {
        const int64_t tt = t < n_tok ? t : 0;
        act[t].q = q.data() + tt * n_in / 16;
        act[t].ds = ds.data() + tt * (n_in / 32);
    }
    const size_t rb = row_bytes(hip::file_type(T), uint64_t(n_in));
    if (!bytes) bytes = w.bytes.data();
    std::vector<float> out(size_t(n_tok * n_out));
    for (int64_t o = 0; o < n_out; ++o) {
        float acc[8] = {};
        const int64_t n_items = n_in / D::kWeights * D::kItems;
        for (int64_t it = 0; it < n_items; ++it)
            hip::q8_item<T, 8, D>(bytes + o * rb, int(it / D::kItems), int(it % D::kItems), act,
                                  acc);
        for (int64_t t = 0; t < n_tok; ++t) out[size_t(t * n_out + o)] = acc[t];
    }
    return out;
}

// The host pass of the kernels' f16 decoding (branch-free since the GPU passes became one
// conversion instruction) against the compiler's own half type, every bit pattern.
TEST(HipSpeedPaths, F16ScalesDecodeLikeTheCompilersHalf) {
    int checked = 0;
    for (uint32_t b = 0; b < 0x10000u; ++b) {
        const auto h = static_cast<uint16_t>(b);
        const float want = static_cast<float>(std::bit_cast<_Float16>(h));
        const float got = hip::f16_bits_to_f32(h);
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << std::hex << b;
        } else {
            EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << std::hex << b;
        }
        ++checked;
    }
    EXPECT_EQ(checked, 65536);
}

TEST(HipSpeedPaths, Q8ItemsOnTheHostMatchTheQuantisedProduct) {
    for (auto [n_in, n_out] :
         {std::tuple<int64_t, int64_t>{256, 3}, {512, 5}, {2304, 2}, {2048, 3}, {4096, 2}})
        for (int64_t T : {1, 3, 8}) {
            auto x = random_floats(size_t(n_in * T), uint32_t(n_in + T), -2.0f, 2.0f);
            for (size_t i = 0; i < x.size(); i += 7) x[i] *= 0.01f;
            const auto xq = q8_activations(x);
            const std::string shape =
                std::to_string(n_in) + "x" + std::to_string(n_out) + " T=" + std::to_string(T);
            auto check = [&](DType t, const std::vector<float>& y, const QuantWeight& w) {
                EXPECT_LT(reported_nmse("host items " + std::string(dtype_name(t)) + " " + shape, y,
                                        ref_matmul(w, xq, T)),
                          1e-10);
            };
            const QuantWeight w40(DType::Q4_0, {n_in, n_out, 1}, 1),
                w80(DType::Q8_0, {n_in, n_out, 1}, 2), w4k(DType::Q4_K, {n_in, n_out, 1}, 3),
                w5k(DType::Q5_K, {n_in, n_out, 1}, 4), w6k(DType::Q6_K, {n_in, n_out, 1}, 5);
            check(DType::Q4_0, host_items_matvec<DType::Q4_0>(w40, x, T), w40);
            check(DType::Q8_0, host_items_matvec<DType::Q8_0>(w80, x, T), w80);
            check(DType::Q4_K, host_items_matvec<DType::Q4_K>(w4k, x, T), w4k);
            check(DType::Q5_K, host_items_matvec<DType::Q5_K>(w5k, x, T), w5k);
            // The expert FFN's Q4_K / Q5_K items (32 weights; the dense ones are 64).
            using E4 = hip::Q8ExpertDot<DType::Q4_K>::type;
            using E5 = hip::Q8ExpertDot<DType::Q5_K>::type;
            static_assert(E4::kItems == 2 * hip::Q8Dot<DType::Q4_K>::kItems);
            check(DType::Q4_K, host_items_matvec<DType::Q4_K, E4>(w4k, x, T), w4k);
            check(DType::Q5_K, host_items_matvec<DType::Q5_K, E5>(w5k, x, T), w5k);
            check(DType::Q6_K, host_items_matvec<DType::Q6_K>(w6k, x, T), w6k);
            // The repacked layouts (weight_repack.h) discrete GPUs upload Q4_0 / Q8_0 in.
            std::vector<uint8_t> p40(w40.bytes.size()), p80(w80.bytes.size());
            repack_rows(w40.desc("q4_0"), 0, uint64_t(n_out), p40.data());
            repack_rows(w80.desc("q8_0"), 0, uint64_t(n_out), p80.data());
            check(DType::Q4_0, host_items_matvec<hip::kQ4_0R>(w40, x, T, p40.data()), w40);
            check(DType::Q8_0, host_items_matvec<hip::kQ8_0R>(w80, x, T, p80.data()), w80);
            if (n_in % 2048 == 0) {  // Q6_K: rows of whole groups of 8 super-blocks
                std::vector<uint8_t> p6k(w6k.bytes.size());
                repack_rows(w6k.desc("q6_k"), 0, uint64_t(n_out), p6k.data());
                check(DType::Q6_K, host_items_matvec<hip::kQ6_KR>(w6k, x, T, p6k.data()), w6k);
            }
        }
}

TEST(HipSpeedPaths, Q8MatvecEveryTypeShapeAndTokenCount) {
    TANDEM_HIP_OR_SKIP(hip);
    // (n_in, n_out): one row, odd row counts, rows over several blocks of 128 threads' items,
    // an 8B model's down projection length.
    const std::tuple<int64_t, int64_t> shapes[] = {
        {256, 1}, {256, 67}, {2304, 33}, {4096, 19}, {14336, 5}};
    for (DType t : kQ8Types)
        for (auto [n_in, n_out] : shapes)
            for (int64_t T : {1, 2, 3, 5, 8}) {
                QuantWeight w(t, {n_in, n_out, 1}, uint32_t(n_in + n_out + T));
                // Activations with a spread of magnitudes, as after a norm.
                auto x = random_floats(size_t(n_in * T), uint32_t(T * 31 + n_out), -2.0f, 2.0f);
                for (size_t i = 0; i < x.size(); i += 7) x[i] *= 0.01f;
                const OpBuilder build = [&](OpGraph& g, Backend& b, std::vector<float>& out) {
                    g.node(Op::MatMul, g.output(out, n_out, T),
                           {g.weight(b, w), g.input(x.data(), n_in, T)});
                };
                const auto r = run_both(*hip, build);
                const std::string what = std::string(dtype_name(t)) + " " + std::to_string(n_in) +
                                         "x" + std::to_string(n_out) + " T=" + std::to_string(T);
                const auto xq = q8_activations(x);
                EXPECT_LT(reported_nmse(what + " vs q8 ref", r.hip, ref_matmul(w, xq, T)), 1e-10)
                    << what;
                // q8 activations: relative error per value up to 1/254 of the block's max; the
                // CPU backend's q8 path is held to the same bound.
                EXPECT_LT(reported_nmse(what + " vs f32 ref", r.hip, ref_matmul(w, x, T)), 2e-4)
                    << what;
                EXPECT_LT(reported_nmse(what + " vs cpu", r.hip, as_double(r.cpu)), 2e-4) << what;
            }
}

// TANDEM_HIP_Q8_ROWS = 1, 2 and 4 output rows per block of 128 threads (the last block partly
// past the end for odd row counts); the default is 4 (2 for Q8_0).
TEST(HipSpeedPaths, Q8MatvecRowsPerBlock) {
    TANDEM_HIP_OR_SKIP(hip);
    for (const char* rows : {"1", "2", "4"}) {
        ::setenv("TANDEM_HIP_Q8_ROWS", rows, 1);
        for (DType t : kQ8Types)
            for (auto [n_in, n_out, T] : {std::tuple<int64_t, int64_t, int64_t>{256, 1, 1},
                                          {2304, 67, 2},
                                          {4096, 33, 5},
                                          {768, 3, 8}}) {
                QuantWeight w(t, {n_in, n_out, 1}, uint32_t(n_out + T));
                auto x = random_floats(size_t(n_in * T), uint32_t(T + 5), -2.0f, 2.0f);
                const auto y = run_matmul(*hip, w, x, T);
                const std::string what = std::string(rows) + " rows/block " +
                                         std::string(dtype_name(t)) + " " + std::to_string(n_in) +
                                         "x" + std::to_string(n_out) + " T=" + std::to_string(T);
                EXPECT_LT(reported_nmse(what, y, ref_matmul(w, q8_activations(x), T)), 1e-10)
                    << what;
            }
    }
    ::unsetenv("TANDEM_HIP_Q8_ROWS");
}

// Q4_0 / Q8_0 / Q6_K weights repacked at upload (the default where weights are copied;
// TANDEM_HIP_REPACK=0 keeps the file layout) through every kernel that reads them: the q8 and
// f32 decode matvecs, the tiled prefill matmul, get_rows, and the same weights in the file
// layout; rows that are not whole groups of 8 blocks (Q6_K: 8 super-blocks) are not repacked.
TEST(HipSpeedPaths, RepackedWeightsEveryKernel) {
    const struct {
        int64_t n_in, n_out, T;
    } cases[] = {{4096, 21, 1},  {2304, 37, 3}, {14336, 5, 8}, {512, 70, 70},
                 {2048, 40, 20}, {4096, 6, 2},  {96, 9, 2}};
    for (const char* repack : {"1", "0"})
        for (const char* q8 : {"1", "0"})
            for (const char* mma : {"1", "0"}) {
                ::setenv("TANDEM_HIP_REPACK", repack, 1);
                ::setenv("TANDEM_HIP_Q8", q8, 1);
                ::setenv("TANDEM_HIP_MMA", mma, 1);
                auto hip = hip_backend();
                ::unsetenv("TANDEM_HIP_REPACK");
                ::unsetenv("TANDEM_HIP_Q8");
                ::unsetenv("TANDEM_HIP_MMA");
                if (!hip)
                    GTEST_SKIP()
                        << "no HIP backend (plugin not built, or no ROCm/CUDA device on this "
                           "host)";
                for (const auto& c : cases)
                    for (DType t : {DType::Q4_0, DType::Q8_0, DType::Q6_K}) {
                        if (c.n_in % int64_t(dtype_traits(t).block_elems) != 0) continue;
                        QuantWeight w(t, {c.n_in, c.n_out, 1}, uint32_t(c.n_out + c.T));
                        auto x =
                            random_floats(size_t(c.n_in * c.T), uint32_t(c.T + 3), -2.0f, 2.0f);
                        std::vector<float> y, rows;
                        std::vector<int32_t> ids{0, int32_t(c.n_out - 1), int32_t(c.n_out / 2)};
                        OpGraph g;
                        const TensorId wt = g.weight(*hip, w);
                        g.node(Op::MatMul, g.output(y, c.n_out, c.T),
                               {wt, g.input(x.data(), c.n_in, c.T)});
                        g.node(Op::GetRows, g.output(rows, c.n_in, 3),
                               {wt, g.input(ids.data(), 3, 1, DType::I32)});
                        g.run(*hip);
                        const std::string what =
                            std::string("repack ") + repack + " q8 " + q8 + " mma " + mma + " " +
                            std::string(dtype_name(t)) + " " + std::to_string(c.n_in) + "x" +
                            std::to_string(c.n_out) + " T=" + std::to_string(c.T);
                        // q8 activations where the q8 matvec takes the shape (T <= 8, rows of
                        // whole groups of the activation layout), else exact.
                        const bool q8_path = q8[0] == '1' && c.T <= 8 && c.n_in % 256 == 0;
                        const auto ref =
                            q8_path ? ref_matmul(w, q8_activations(x), c.T) : ref_matmul(w, x, c.T);
                        // Prefill on the matrix units rounds weights and activations to f16.
                        const bool f16 = hip->device().f16_prefill_matmul && c.T > 8;
                        EXPECT_LT(reported_nmse(what, y, ref), f16 ? 1e-5 : 1e-10) << what;
                        for (size_t r = 0; r < ids.size(); ++r)
                            for (int64_t i = 0; i < c.n_in; ++i)
                                ASSERT_EQ(rows[r * size_t(c.n_in) + size_t(i)],
                                          w.values[size_t(ids[r] * c.n_in + i)])
                                    << what << " row " << ids[r] << " element " << i;
                    }
            }
}

// Prefill matmuls on the matrix units (hip_matmul_mma.hip: NVIDIA's tensor cores through the
// CUDA path, MFMA / WMMA on AMD). A backend whose device compilation has them checks them against
// the f32 tiles as it starts and must keep them on (a misfiring check would turn them off and the
// op suite's bounds would hold for the f32 tiles). Every type the kernel takes, the file layouts
// and the repacked ones, partial row and token tiles, an odd number of 32-input groups, a bias:
// against a double sum over the f16-rounded weights and activations, so only the f32 sums'
// rounding remains and a wrong lane or tile index shows at any size. Activations beyond f16's
// range saturate (never inf). TANDEM_HIP_MMA=0 turns the path off.
TEST(HipSpeedPaths, MatrixUnitPrefill) {
    struct Unset {
        ~Unset() {
            ::unsetenv("TANDEM_HIP_MMA");
            ::unsetenv("TANDEM_HIP_REPACK");
        }
    } unset;
    {
        ::setenv("TANDEM_HIP_MMA", "0", 1);
        auto off = hip_backend();
        ::unsetenv("TANDEM_HIP_MMA");
        if (!off)
            GTEST_SKIP()
                << "no HIP backend (plugin not built, or no ROCm/CUDA device on this host)";
        EXPECT_FALSE(off->device().f16_prefill_matmul) << "TANDEM_HIP_MMA=0";
    }
    for (const char* repack : {"1", "0"}) {
        ::setenv("TANDEM_HIP_REPACK", repack, 1);
        auto hip = hip_backend();
        ::unsetenv("TANDEM_HIP_REPACK");
        std::printf("hip device: %s\n", hip->device().notes.c_str());
        if (!hip->device().f16_prefill_matmul) {
            EXPECT_EQ(hip->device().notes.find("failed its check"), std::string::npos)
                << "the check turned the path off: " << hip->device().notes;
            GTEST_SKIP() << "no matrix-unit prefill on this device: " << hip->device().notes;
        }
        const struct {
            int64_t n_in, n_out, T;
        } cases[] = {{96, 20, 9}, {288, 160, 70}, {512, 130, 64}, {1024, 45, 130}, {2048, 200, 33}};
        const DType types[] = {DType::F16,  DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                               DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};
        for (const auto& c : cases)
            for (DType t : types) {
                if (c.n_in % int64_t(dtype_traits(t).block_elems) != 0) continue;
                QuantWeight w(t, {c.n_in, c.n_out, 1}, uint32_t(c.n_out + c.T));
                QuantWeight bias(DType::F32, {c.n_out, 1, 1}, uint32_t(c.T));
                auto x = random_floats(size_t(c.n_in * c.T), uint32_t(c.T + 7), -3.0f, 3.0f);
                if (c.T == 130) x[5] = 1e6f, x[size_t(c.n_in) + 9] = -7e4f;  // beyond f16
                std::vector<float> y;
                OpGraph g;
                g.node(Op::MatMul, g.output(y, c.n_out, c.T),
                       {g.weight(*hip, w), g.input(x.data(), c.n_in, c.T), g.weight(*hip, bias)});
                g.run(*hip);
                QuantWeight w16 = w;
                for (float& v : w16.values) v = round_f16(v);
                std::vector<float> x16(x.size());
                for (size_t i = 0; i < x.size(); ++i) x16[i] = round_f16(x[i]);
                const std::string what = std::string("repack ") + repack + " " +
                                         std::string(dtype_name(t)) + " " + std::to_string(c.n_in) +
                                         "x" + std::to_string(c.n_out) +
                                         " T=" + std::to_string(c.T);
                ASSERT_EQ(y.size(), size_t(c.n_out * c.T)) << what;
                for (float v : y) ASSERT_TRUE(std::isfinite(v)) << what;
                // Rows of Q5_0's 22-byte blocks that are not a multiple of 4 bytes are read
                // by no fast kernel (hip_blocks.h, rows_aligned): the generic f32 kernel runs,
                // exact.
                if (t == DType::Q5_0 && row_bytes(t, uint64_t(c.n_in)) % 4 != 0) {
                    EXPECT_LT(reported_nmse(what + " (f32 kernel)", y,
                                            ref_matmul(w, x, c.T, &bias.values)),
                              1e-10)
                        << what;
                    continue;
                }
                EXPECT_LT(reported_nmse(what, y, ref_matmul(w16, x16, c.T, &bias.values)), 1e-9)
                    << what;
            }
    }
}

// The matrix-unit prefill's input forms: x converted to f16 once for the matmuls sharing it
// (TANDEM_HIP_MMA_X16) and repacked Q4_0 / Q8_0 decoded straight to f16 (TANDEM_HIP_MMA_F16DQ)
// give the bits of the tiles converting their own f32 rows and decoding through f32.
TEST(HipSpeedPaths, PrefillInputFormsSameBits) {
    TANDEM_HIP_OR_SKIP(fast);
    if (!fast->device().f16_prefill_matmul)
        GTEST_SKIP() << "no matrix-unit prefill on this device: " << fast->device().notes;
    const ScopedEnv x16("TANDEM_HIP_MMA_X16", "0"), dq("TANDEM_HIP_MMA_F16DQ", "0");
    TANDEM_HIP_OR_SKIP(f32_forms);
    expect_prefill_forms_same_bits(*fast, *f32_forms);
}

// The matrix-unit matmul in 128-token tiles past 64 tokens (TANDEM_HIP_MMA_TOKS=128, NVIDIA's
// default) gives the bits of the 64-token tiles (=64, AMD's): 70 tokens (one part-filled wide
// tile), 200 (a whole one and a tail), 40 (64 in both).
TEST(HipSpeedPaths, PrefillTileWidthsSameBits) {
    std::unique_ptr<Backend> wide;
    {
        const ScopedEnv toks("TANDEM_HIP_MMA_TOKS", "128");
        TANDEM_HIP_OR_SKIP(be);
        wide = std::move(be);
    }
    if (!wide->device().f16_prefill_matmul)
        GTEST_SKIP() << "no matrix-unit prefill on this device: " << wide->device().notes;
    const ScopedEnv toks("TANDEM_HIP_MMA_TOKS", "64");
    TANDEM_HIP_OR_SKIP(narrow);
    expect_prefill_forms_same_bits(*wide, *narrow, {40, 70, 200});
}

// Short prompts: the matrix-unit matmul splits its inputs where its grid is small (4096 inputs
// of repacked Q4_0: 16 parts of 256 inputs; Q6_K: 2 of 2048; Q4_K 16 of 256), against
// TANDEM_HIP_MATMUL_SPLIT=0 (fused_path_checks.h).
TEST(HipSpeedPaths, PrefillShortPromptsSplitOverInputs) {
    TANDEM_HIP_OR_SKIP(split);
    if (!split->device().f16_prefill_matmul)
        GTEST_SKIP() << "no matrix-unit prefill on this device: " << split->device().notes;
    const ScopedEnv off("TANDEM_HIP_MATMUL_SPLIT", "0");
    TANDEM_HIP_OR_SKIP(whole);
    expect_prefill_split_matches_unsplit(*split, *whole, true);
}

TEST(HipSpeedPaths, Q8MatvecsSharingAnInputFused) {
    TANDEM_HIP_OR_SKIP(hip);
    expect_q8_matvecs_sharing_an_input(*hip);
}

// TANDEM_HIP_PROFILE=1: each step waits behind the profiler's hold until the host has enqueued
// every node, is then released and runs them (results checked as without the profiler), and
// the table of GPU time per node comes out when the backend goes.
TEST(HipSpeedPaths, ProfileModeReleasesTheStepAndPrintsGpuTimePerNode) {
    const ScopedEnv prof("TANDEM_HIP_PROFILE", "1");
    TANDEM_HIP_OR_SKIP(hip);
    testing::internal::CaptureStderr();
    expect_q8_matvecs_sharing_an_input(*hip);
    hip.reset();  // the table is printed when the backend goes
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("hip profile (TANDEM_HIP_PROFILE=1"), std::string::npos) << err;
    EXPECT_NE(err.find("| decode mat_mul q4_k matvec"), std::string::npos) << err;
}

TEST(HipSpeedPaths, Q8InputReusedThenRequantisedAfterItChanges) {
    TANDEM_HIP_OR_SKIP(hip);
    expect_q8_input_reused_then_requantised(*hip);
}

TEST(HipSpeedPaths, Q8SwitchedOffKeepsF32Activations) {
    const ScopedEnv off("TANDEM_HIP_Q8", "0");
    TANDEM_HIP_OR_SKIP(hip);
    expect_f32_activations(*hip, kQ8Types, 1e-10);
}

// (cols, tokens, weight type, add): registers only, the re-read tail (14336, 5120), the
// residual add fused in (rows up to 4096) or not (14336). (The q8 path takes rows of a
// multiple of 256; partial warps of the norm: RmsNormWideRowsAndHeads, AddThenRmsNormFused.)
TEST(HipSpeedPaths, RmsNormQuantisesForTheMatmulAfterIt) {
    TANDEM_HIP_OR_SKIP(hip);
    expect_rms_norm_quantises_for_the_matmul_after_it(*hip, {{4096, 1, DType::Q4_0, false},
                                                             {4096, 1, DType::Q4_K, true},
                                                             {2304, 2, DType::Q6_K, true},
                                                             {768, 8, DType::Q8_0, true},
                                                             {14336, 3, DType::Q4_K, true},
                                                             {5120, 5, DType::Q5_K, false}});
}

TEST(HipSpeedPaths, RopeWritesTheKvCacheItself) {
    TANDEM_HIP_OR_SKIP(hip);
    expect_rope_writes_the_kv_cache(*hip);
}

// q/k/v then their rope and KV stores: one launch (rows per block of whole rotation pairs),
// both modes, f16 and f32 caches.
TEST(HipSpeedPaths, QkvRopesAndStoresItself) {
    TANDEM_HIP_OR_SKIP(hip);
    expect_qkv_rope_and_kv_store(*hip);
}

// The split decode attention's combine leaves the q8 activations of the output projection.
TEST(HipSpeedPaths, AttentionQuantisesForTheMatmulAfterIt) {
    TANDEM_HIP_OR_SKIP(hip);
    expect_attention_quantises_for_the_matmul_after_it(*hip, hip::kQ8LayoutGroup);
}

// A prefill run in chunks of `chunk` tokens after c.n_past stored ones (c.T tokens in all, a
// multiple of chunk): the prefix stored by a graph of its own, then one KV store + attention graph
// built once and run for every chunk, so the HIP backend captures it at the second chunk and
// replays it from the third while n_past moves (the inputs' host pointers change per chunk, as
// the engine's may). The chunks' outputs, concatenated, are the attention of the c.T tokens.
std::vector<float> run_prefill_chunks(Backend& b, const AttnCase& c, const AttnData& d,
                                      int64_t chunk) {
    const int64_t hd = c.head_dim, kvw = c.n_kv_head * hd, qw = c.n_head * hd;
    const int64_t n_ctx = c.n_past + c.T + 3;
    b.allocate_kv({KvDesc{c.kv_type, kvw, n_ctx}, KvDesc{c.kv_type, kvw, n_ctx}});
    if (c.n_past > 0) {
        OpGraph g;
        TensorId kc = g.g.kv(0, "k", c.kv_type, kvw, n_ctx),
                 vc = g.g.kv(1, "v", c.kv_type, kvw, n_ctx);
        g.node(Op::KvStore, kc, {g.input(d.k_all.data(), kvw, c.n_past), kc});
        g.node(Op::KvStore, vc, {g.input(d.v_all.data(), kvw, c.n_past), vc});
        g.run(b);
    }
    OpGraph step;
    std::vector<float> out, all;
    TensorId kin = step.input(d.k_all.data(), kvw, chunk);
    TensorId vin = step.input(d.v_all.data(), kvw, chunk);
    TensorId qin = step.input(d.q.data(), qw, chunk);
    TensorId kc = step.g.kv(0, "k", c.kv_type, kvw, n_ctx),
             vc = step.g.kv(1, "v", c.kv_type, kvw, n_ctx);
    step.node(Op::KvStore, kc, {kin, kc});
    step.node(Op::KvStore, vc, {vin, vc});
    step.node(Op::Attention, step.output(out, qw, chunk), {qin, kc, vc},
              {int32_t(c.n_head), int32_t(c.n_kv_head), int32_t(hd), int32_t(c.window)},
              {0.125f, c.softcap});
    step.g.validate();
    b.reserve_scratch(step.g.plan_scratch());
    for (int64_t t0 = 0; t0 < c.T; t0 += chunk) {
        const int64_t n_past = c.n_past + t0;
        step.io.n_past = static_cast<int32_t>(n_past);
        step.io.inputs[0] = d.k_all.data() + n_past * kvw;
        step.io.inputs[1] = d.v_all.data() + n_past * kvw;
        step.io.inputs[2] = d.q.data() + t0 * qw;
        b.compute(step.g, step.io);
        all.insert(all.end(), out.begin(), out.end());
    }
    return all;
}

// A case run in chunks, as the tests' messages name it.
std::string chunked_case_name(const AttnCase& c, int64_t chunk) {
    return std::string(dtype_name(c.kv_type)) + " heads " + std::to_string(c.n_head) + "/" +
           std::to_string(c.n_kv_head) + " hd " + std::to_string(c.head_dim) + " window " +
           std::to_string(c.window) + (c.softcap > 0 ? " softcap" : "") + " past " +
           std::to_string(c.n_past) + " T=" + std::to_string(c.T / chunk) + "x" +
           std::to_string(chunk);
}

// Prefill chunks of 20-70 tokens (more than the split decode path takes) on k_attention_flash
// (32 query rows of a KV head a block, K/V tiles of 32 positions, 16 at head_dim 256), then the
// same steps on the one-block-per-(token, head) k_attention (TANDEM_HIP_FLASH=0, read at every
// launch; a fresh backend, so no step graph captured with the other kernel replays), both against
// the double reference and the CPU backend with the op suite's bounds. Rows over several blocks
// (the last one part empty), GQA groups that do not divide 32 (3, 7), head_dim 256, a window
// shorter than a chunk, softcap, no prefix; head_dim 96 runs k_attention either way.
TEST(HipSpeedPaths, FlashAttentionPrefillChunks) {
    struct Case {
        AttnCase c;  // c.T: all the chunks' tokens
        int64_t chunk;
    };
    const Case cases[] = {
        {{32, 8, 128, 0, 0, DType::F16, 40, 3 * 37}, 37},     // Llama-shaped: 5 blocks a KV head
        {{28, 4, 128, 0, 0, DType::F16, 0, 3 * 20}, 20},      // Qwen2's GQA 7:1, no prefix
        {{8, 4, 256, 24, 50.0f, DType::F32, 9, 3 * 33}, 33},  // hd 256, window, softcap
        {{4, 4, 64, 0, 0, DType::F32, 130, 3 * 70}, 70},      // MHA, positions over many tiles
        {{12, 4, 64, 40, 0, DType::F16, 61, 3 * 45}, 45},     // GQA 3:1, window < chunk
        {{8, 2, 64, 20, 30.0f, DType::F16, 5, 3 * 33}, 33},   // f16 cache, softcap, window
        {{6, 2, 96, 0, 30.0f, DType::F32, 10, 3 * 24}, 24},   // hd 96: k_attention
    };
    struct Unset {  // on every way out of the test, a failed assertion or the skip included
        ~Unset() {
            ::unsetenv("TANDEM_HIP_FLASH");
            ::unsetenv("TANDEM_HIP_MMA");
        }
    } unset;
    // "": the default (matrix units where the device has them), "m": TANDEM_HIP_MMA=0 (the f32
    // flash tiles), "0": TANDEM_HIP_FLASH=0.
    for (const char* flash : {"", "m", "0"}) {
        if (flash[0] == 'm') ::setenv("TANDEM_HIP_MMA", "0", 1);
        if (flash[0] == '0') ::setenv("TANDEM_HIP_FLASH", "0", 1);
        auto hip = hip_backend();
        ::unsetenv("TANDEM_HIP_MMA");
        if (!hip)
            GTEST_SKIP()
                << "no HIP backend (plugin not built, or no ROCm/CUDA device on this host)";
        auto cpu = make_backend("cpu", 2);
        for (const Case& k : cases) {
            const AttnCase& c = k.c;
            const AttnData d(c);
            const auto out = run_prefill_chunks(*hip, c, d, k.chunk);
            const auto ref_cpu = run_prefill_chunks(*cpu, c, d, k.chunk);
            // q and the softmax weights rounded to f16 on the matrix units (f16 caches,
            // head_dim 64 / 128): the op suite's bound for them.
            const bool mma = !flash[0] && hip->device().f16_prefill_attention &&
                             c.kv_type == DType::F16 && (c.head_dim == 64 || c.head_dim == 128);
            const std::string what = std::string(flash[0] == '0'   ? "TANDEM_HIP_FLASH=0 "
                                                 : flash[0] == 'm' ? "TANDEM_HIP_MMA=0 "
                                                 : mma             ? "matrix units "
                                                                   : "flash ") +
                                     chunked_case_name(c, k.chunk);
            ASSERT_EQ(out.size(), ref_cpu.size()) << what;
            EXPECT_LT(reported_nmse(what + " vs f64", out, ref_attention(c, d)), mma ? 1e-5 : 1e-10)
                << what;
            // The CPU's f16 dot may round q to f16: the op suite's bound for an f16 cache.
            EXPECT_LT(reported_nmse(what + " vs cpu", out, as_double(ref_cpu)),
                      c.kv_type == DType::F32 ? 1e-10 : 1e-5)
                << what;
        }
    }
}

// Decode steps (1-3 tokens, replayed as the cache grows) on k_attention_split_mma (an f16 cache,
// head_dim 64 / 128, where the device has matrix units) in blocks of 4 query heads and of 16
// (TANDEM_HIP_SPLIT_MMA_HEADS=16), and on k_attention_split (TANDEM_HIP_SPLIT_MMA=0; both read at
// every launch, a fresh backend each), all against the double reference and the CPU backend: a
// context over all 32 splits and many tiles of every wave, GQA groups of 20 and 34 (blocks of 16
// with the last part empty; of 4 with the last one part empty at 34), a window, softcap,
// head_dim 64 and 128, MHA, and a step starting at position 0 (fewer positions than a tile).
TEST(HipSpeedPaths, SplitDecodeOnMatrixUnits) {
    struct Case {
        AttnCase c;
        int64_t chunk;
    };
    const Case cases[] = {
        {{32, 8, 128, 0, 0, DType::F16, 4000, 4}, 1},       // Llama-shaped, 4000 positions
        {{40, 2, 128, 0, 20.0f, DType::F16, 600, 6}, 3},    // group 20, softcap, 3 tokens
        {{34, 1, 64, 50, 0, DType::F16, 300, 4}, 2},        // group 34, window 50
        {{8, 2, 64, 0, 0, DType::F16, 0, 6}, 2},            // from position 0
        {{16, 16, 128, 0, 30.0f, DType::F16, 1100, 2}, 1},  // MHA (group 1), softcap
    };
    struct Unset {
        ~Unset() {
            ::unsetenv("TANDEM_HIP_SPLIT_MMA");
            ::unsetenv("TANDEM_HIP_SPLIT_MMA_HEADS");
        }
    } unset;
    for (const char* mode : {"4", "16", "0"}) {  // heads a block on the matrix units, or off
        const bool split_mma = mode[0] != '0';
        if (!split_mma) ::setenv("TANDEM_HIP_SPLIT_MMA", "0", 1);
        ::setenv("TANDEM_HIP_SPLIT_MMA_HEADS", mode, 1);
        auto hip = hip_backend();
        if (!hip)
            GTEST_SKIP()
                << "no HIP backend (plugin not built, or no ROCm/CUDA device on this host)";
        const bool mma = split_mma && hip->device().f16_decode_attention;
        if (split_mma && !mma)
            std::printf("no matrix units for decode attention here: the split kernel each way\n");
        auto cpu = make_backend("cpu", 2);
        for (const Case& k : cases) {
            const AttnCase& c = k.c;
            const AttnData d(c);
            const auto out = run_prefill_chunks(*hip, c, d, k.chunk);
            const auto ref_cpu = run_prefill_chunks(*cpu, c, d, k.chunk);
            const std::string what =
                (mma ? "matrix units, " + std::string(mode) + " heads a block, "
                     : std::string("split kernel, ")) +
                chunked_case_name(c, k.chunk);
            ASSERT_EQ(out.size(), ref_cpu.size()) << what;
            // q and the softmax weights rounded to f16 on the matrix units: the op suite's bound.
            EXPECT_LT(reported_nmse(what + " vs f64", out, ref_attention(c, d)), mma ? 1e-5 : 1e-10)
                << what;
            EXPECT_LT(reported_nmse(what + " vs cpu", out, as_double(ref_cpu)), 1e-5) << what;
        }
    }
}

TEST(HipSpeedPaths, AddThenRmsNormFused) {
    TANDEM_HIP_OR_SKIP(hip);
    expect_add_then_rms_norm(*hip);
}

// The output / down projection, the residual add and the next RMSNorm: one launch leaves the
// sum and the q8 activations of sum * w, and the matvecs reading the norm apply its 1 / rms
// (decode: 1-2 tokens, rows of a multiple of 256); elsewhere the norm runs on its own. Also the
// norm's output written after all when a node other than a matvec reads it.
TEST(HipSpeedPaths, MatvecAddNormFoldedIntoTheMatvecsAfterIt) {
    TANDEM_HIP_OR_SKIP(hip);
    const auto folds = [](int64_t cols, int64_t T) {
        return cols % hip::kQ8LayoutGroup == 0 && T <= 2;  // hip::kQ8NormMaxTokens
    };
    expect_matvec_add_norm_matvecs(*hip,
                                   {{512, 256, 1, DType::Q4_0, DType::Q4_0, true, false, false},
                                    {1024, 512, 2, DType::Q4_K, DType::Q6_K, true, true, false},
                                    {256, 768, 1, DType::Q8_0, DType::Q5_K, false, false, true},
                                    {14336, 4096, 1, DType::Q6_K, DType::Q4_K, true, false, false},
                                    {512, 256, 3, DType::Q4_0, DType::Q8_0, true, false, false},
                                    {512, 288, 1, DType::Q4_0, DType::Q4_0, true, true, true}},
                                   folds, hip::kQ8LayoutGroup);
}

// The expert FFN over q8 activations (hip_moe_q8.hip): expect_moe_q8_paths, prefill on the
// int8-dot kernels (the matrix units off: MoeMmaPrefillAgainstF16Reference takes them).
TEST(HipSpeedPaths, MoeQ8PrefillMatchesDecodeAndElementWise) {
    const ScopedEnv int8_prefill("TANDEM_HIP_MMA", "0");
    TANDEM_HIP_OR_SKIP(hip);
    expect_moe_q8_paths(*hip, [] {
        const ScopedEnv off("TANDEM_HIP_MOE_Q8", "0");
        return hip_backend();
    });
}

// The expert FFN's prefill on the matrix units (hip_moe_mma.hip): expect_moe_f16_prefill.
TEST(HipSpeedPaths, MoeMmaPrefillAgainstF16Reference) {
    TANDEM_HIP_OR_SKIP(hip);
    if (!hip->device().f16_prefill_matmul)
        GTEST_SKIP() << "no matrix-unit prefill on this device: " << hip->device().notes;
    std::unique_ptr<Backend> int8;
    {
        const ScopedEnv off("TANDEM_HIP_MMA", "0");
        int8 = hip_backend();
    }
    ASSERT_TRUE(int8);
    expect_moe_f16_prefill(*hip, *int8);
}

// The FFN between two folded norms (rows of a multiple of 256, T <= 2; 3 tokens: the norms
// apart): gate + up of the norm's q8 values, the gated activation quantised for the down
// projection (640: a width the q8 path does not take, down over f32 activations).
TEST(HipSpeedPaths, FfnAfterAFoldedNorm) {
    TANDEM_HIP_OR_SKIP(hip);
    expect_ffn_gated_act(*hip,
                         {{256, 512, 1, DType::Q4_0, 0, false},
                          {512, 1024, 2, DType::Q8_0, 1, true},
                          {256, 14336, 1, DType::Q4_K, 0, false},
                          {512, 768, 2, DType::Q6_K, 1, false},
                          {256, 512, 3, DType::Q4_0, 0, false},
                          {256, 640, 1, DType::Q8_0, 0, false}},
                         hip::kQ8LayoutGroup);
}

TEST(HipSpeedPaths, GatedActQuantisesForTheMatmulAfterIt) {
    TANDEM_HIP_OR_SKIP(hip);
    expect_gated_act_quantises_for_the_matmul_after_it(*hip, hip::kQ8LayoutGroup);
}

TEST(HipSpeedPaths, RmsNormWideRowsAndHeads) {
    TANDEM_HIP_OR_SKIP(hip);
    // (cols, rows, group): 4096 = every float4 in registers, 14336 and 8196 re-read past 4096,
    // 128-float heads, 8 tokens.
    const std::tuple<int64_t, int64_t, int32_t> cases[] = {
        {4096, 1, 0}, {4096, 8, 0}, {14336, 2, 0}, {8196, 3, 0}, {4096, 5, 128}, {5120, 1, 0}};
    for (auto [cols, rows, group] : cases) {
        const int64_t len = group ? group : cols;
        auto x = random_floats(size_t(cols * rows), uint32_t(cols + rows), -3, 3);
        QuantWeight w(DType::F32, {len, 1, 1}, 4);
        const OpBuilder build = [&](OpGraph& g, Backend& b, std::vector<float>& out) {
            g.node(Op::RmsNorm, g.output(out, cols, rows),
                   {g.input(x.data(), cols, rows), g.weight(b, w)}, {group, 0, 0, 0}, {1e-5f, 0});
        };
        std::vector<double> ref(x.size());
        for (int64_t s = 0; s < cols * rows / len; ++s) {
            double ss = 0;
            for (int64_t i = 0; i < len; ++i) ss += double(x[s * len + i]) * x[s * len + i];
            const double inv = 1.0 / std::sqrt(ss / double(len) + 1e-5);
            for (int64_t i = 0; i < len; ++i) ref[s * len + i] = x[s * len + i] * inv * w.values[i];
        }
        const auto r = run_both(*hip, build);
        const std::string what = "rms_norm " + std::to_string(cols) + "x" + std::to_string(rows) +
                                 " group " + std::to_string(group);
        EXPECT_LT(reported_nmse(what, r.hip, ref), 1e-12) << what;
    }
}

}  // namespace
}  // namespace tandem::test
