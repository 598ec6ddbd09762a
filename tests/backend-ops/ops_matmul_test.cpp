// Matmul on every backend: every weight type the engine runs, odd shapes and token counts that
// pick each backend's kernel paths, with bias, and unsupported types as clear errors; against a
// double-precision sum over the dequantised weights and (GPU backends) the CPU backend.
#include <algorithm>
#include <tuple>

#include "op_references.h"
#include "tandem/common/error.h"

namespace tandem::test {
namespace {

class MatOps : public BackendOpTest {};

const DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,
                              DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                              DType::Q4_K, DType::Q5_K, DType::Q6_K};

bool is_float(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

// Bound vs the double sum. The CPU backend quantises activations to q8 for block types: that,
// not its kernels, bounds its error. So do the GPU decode matvecs (1-8 tokens) for the types
// they run over q8 activations (hip_speed_paths_test and vk_q8_matvec_test check them against
// the q8 reference at 1e-10); the other GPU kernels keep f32 activations: rounding only.
double bound_vs_f64(const std::string& backend, DType t, int64_t tokens) {
    if (backend == "cpu") return t == DType::F32 ? 1e-10 : is_float(t) ? 1e-8 : 2e-4;
    const bool q8_type = t == DType::Q4_0 || t == DType::Q8_0 || t == DType::Q4_K ||
                         t == DType::Q5_K || t == DType::Q6_K;
    if (tokens <= 8 && q8_type) return 2e-4;
    return backend == "hip" ? 1e-10 : 1e-9;
}
// A GPU backend vs the CPU backend: the CPU's q8 activations dominate for block types.
double bound_vs_cpu(DType t) {
    return is_float(t) ? 1e-8 : 2e-4;
}
// Where the device's prefill matmul rounds weights and activations to f16 (Vulkan on
// cooperative matrices: 9+ tokens, rows of whole 32-element groups, weights neither f32 nor
// bf16), each product carries ~2^-12 relative error: NMSE ~1e-7, bounded at 1e-5 (a
// 16-element block left out of a 1280-long row gives ~1e-2).
bool f16_prefill(const Backend& be, DType t, int64_t n_in, int64_t tokens) {
    return be.device().f16_prefill_matmul && tokens >= 9 && n_in % 32 == 0 && t != DType::F32 &&
           t != DType::BF16;
}
double bound_f64(const Backend& be, const std::string& backend, DType t, int64_t n_in,
                 int64_t tokens) {
    return f16_prefill(be, t, n_in, tokens) ? 1e-5 : bound_vs_f64(backend, t, tokens);
}
double bound_cpu(const Backend& be, DType t, int64_t n_in, int64_t tokens) {
    return f16_prefill(be, t, n_in, tokens) ? std::max(1e-5, bound_vs_cpu(t)) : bound_vs_cpu(t);
}

// (n_in, n_out, tokens). Decode matvec: 1..8 tokens (Vulkan: 2- and 4-token tiles, activation
// chunks of 64 groups; HIP: rows not a multiple of the rows per block); tiled prefill: 9+ tokens
// (Vulkan 64x64 tiles with row and token tails; HIP partial token and output tiles, several
// k-steps); rows of any length for the float types (96, 100, 513).
const std::tuple<int64_t, int64_t, int64_t> kShapes[] = {
    {256, 1, 1},  {256, 67, 1},  {2304, 67, 1}, {256, 1, 3},    {512, 33, 2},
    {512, 33, 3}, {96, 9, 2},    {100, 7, 1},   {513, 20, 2},   {1024, 45, 5},
    {2304, 5, 6}, {768, 17, 8},  {768, 130, 9}, {256, 64, 9},   {100, 7, 12},
    {96, 20, 12}, {256, 16, 17}, {256, 64, 64}, {512, 130, 70}, {1280, 70, 130}};

TEST_P(MatOps, EveryTypeAndShape) {
    for (DType t : kWeightTypes)
        for (auto [n_in, n_out, T] : kShapes) {
            if (n_in % dtype_traits(t).block_elems) continue;
            QuantWeight w(t, {n_in, n_out, 1}, uint32_t(n_out * 7 + T));
            auto x = random_floats(static_cast<size_t>(n_in * T), uint32_t(T + 99));
            const GraphBuilder build = [&](OpGraph& g, Backend& b, std::vector<float>& out) {
                g.node(Op::MatMul, g.output(out, n_out, T),
                       {g.weight(b, w), g.input(x.data(), n_in, T)});
            };
            check("mat_mul",
                  std::string(dtype_name(t)) + " " + std::to_string(n_in) + "x" +
                      std::to_string(n_out) + " T=" + std::to_string(T),
                  run_graph(*be, build), ref_matmul(w, x, T),
                  bound_f64(*be, GetParam(), t, n_in, T), cpu_output(build),
                  bound_cpu(*be, t, n_in, T));
        }
}

TEST_P(MatOps, WithBias) {
    QuantWeight bias(DType::F32, {45, 1, 1}, 4);
    // f16 on the matvec path, q8_0 on the tiled prefill path (it adds the bias too).
    for (auto [t, n_in, T] : {std::tuple{DType::F16, int64_t(96), int64_t(5)},
                              std::tuple{DType::F16, int64_t(64), int64_t(2)},
                              std::tuple{DType::Q8_0, int64_t(128), int64_t(20)}}) {
        QuantWeight w(t, {n_in, 45, 1}, 3);
        auto x = random_floats(size_t(n_in * T), 5);
        const GraphBuilder build = [&](OpGraph& g, Backend& b, std::vector<float>& out) {
            TensorId wt = g.weight(b, w), bt = g.weight(b, bias);
            g.node(Op::MatMul, g.output(out, 45, T), {wt, g.input(x.data(), n_in, T), bt});
        };
        check("mat_mul+bias", std::string(dtype_name(t)) + " T=" + std::to_string(T),
              run_graph(*be, build), ref_matmul(w, x, T, &bias.values),
              bound_f64(*be, GetParam(), t, n_in, T), cpu_output(build),
              bound_cpu(*be, t, n_in, T));
    }
}

// Weight types a backend has no kernels for; the error names the type (and the weight where the
// upload already refuses it), before anything runs out of bounds.
std::vector<DType> unsupported_types(const std::string& backend) {
    if (backend == "vulkan") return {DType::IQ4_NL};
    if (backend == "hip") return {DType::Q2_K, DType::IQ4_NL};
    return {};
}

TEST_P(MatOps, UnsupportedWeightTypeIsAClearError) {
    auto x = random_floats(512, 2);
    for (DType bad : unsupported_types(GetParam())) {
        std::vector<uint8_t> bytes(row_bytes(bad, 512) * 8);
        const WeightDesc d{"blk.0.ffn_up.weight", bad, {512, 8, 1}, bytes.data(), bytes.size()};
        bool at_upload = true;
        try {
            be->upload_weight(0, d, true);
            at_upload = false;
            OpGraph g;
            std::vector<float> out;
            TensorId wt = g.g.weight(0, d.name, bad, d.ne);
            g.node(Op::MatMul, g.output(out, 8, 1), {wt, g.input(x.data(), 512, 1)});
            g.run(*be);
            ADD_FAILURE() << "mat_mul on " << dtype_name(bad) << " ran";
        } catch (const Error& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find(std::string(dtype_name(bad))), std::string::npos) << msg;
            if (at_upload) {
                EXPECT_NE(msg.find("blk.0.ffn_up.weight"), std::string::npos) << msg;
            }
        }
    }
}

TANDEM_OP_SUITE(MatOps);

}  // namespace
}  // namespace tandem::test
