// Graph::fingerprint(), the key backends replay recorded steps by: equal for graphs built the
// same way, different as soon as a node, a shape or a scratch offset differs (a replayed step
// with another graph's offsets would read and write the wrong bytes), blind to names.
#include <gtest/gtest.h>

#include "engine_fixture.h"

namespace tandem::test {
namespace {

// x -> rms_norm -> mat_mul -> out, with the norm's eps and the matrix shape as parameters.
Graph small_graph(float eps, int64_t n_out, const std::string& prefix = "") {
    Graph g;
    const TensorId w = g.weight(0, prefix + "w", DType::Q8_0, {256, n_out, 1});
    const TensorId nw = g.weight(1, prefix + "nw", DType::F32, {256, 1, 1});
    const TensorId x = g.input(0, prefix + "x", DType::F32, 256);
    const TensorId y = g.activation(prefix + "y", 256, 1);
    const TensorId out = g.output(0, prefix + "out", n_out, 1);
    g.add_node(make_node(Op::RmsNorm, y, {x, nw}, {256, 0, 0, 0}, {eps, 0.0f}));
    g.add_node(make_node(Op::MatMul, out, {w, y}));
    g.plan_scratch();
    return g;
}

TEST(GraphFingerprint, EqualForEqualGraphsAndBlindToNames) {
    EXPECT_EQ(small_graph(1e-5f, 64).fingerprint(), small_graph(1e-5f, 64).fingerprint());
    EXPECT_EQ(small_graph(1e-5f, 64).fingerprint(), small_graph(1e-5f, 64, "other.").fingerprint());
}

TEST(GraphFingerprint, ChangesWithNodesShapesAndOffsets) {
    const uint64_t base = small_graph(1e-5f, 64).fingerprint();
    EXPECT_NE(base, small_graph(1e-6f, 64).fingerprint());   // a node's float parameter
    EXPECT_NE(base, small_graph(1e-5f, 128).fingerprint());  // a weight's and output's shape

    Graph more = small_graph(1e-5f, 64);
    const uint64_t before = more.fingerprint();
    more.add_node(make_node(Op::Scale, more.activation("z", 256, 1), {TensorId(3)}, {}, {2.0f, 0}));
    EXPECT_NE(before, more.fingerprint());  // a node more

    // The same nodes with the scratch offsets planned and not: a replay must tell them apart.
    Graph unplanned;
    {
        const TensorId w = unplanned.weight(0, "w", DType::Q8_0, {256, 64, 1});
        const TensorId nw = unplanned.weight(1, "nw", DType::F32, {256, 1, 1});
        const TensorId x = unplanned.input(0, "x", DType::F32, 256);
        const TensorId pad = unplanned.activation("pad", 256, 1);  // takes offset 0 when planned
        const TensorId y = unplanned.activation("y", 256, 1);
        const TensorId out = unplanned.output(0, "out", 64, 1);
        unplanned.add_node(make_node(Op::Scale, pad, {x}, {}, {1.0f, 0}));
        unplanned.add_node(make_node(Op::RmsNorm, y, {pad, nw}, {256, 0, 0, 0}, {1e-5f, 0}));
        unplanned.add_node(make_node(Op::MatMul, out, {w, y}));
    }
    const uint64_t unplanned_fp = unplanned.fingerprint();
    unplanned.plan_scratch();  // y moves off offset 0 (pad is still live when y is written)
    ASSERT_NE(unplanned.tensor(4).offset, 0u);
    EXPECT_NE(unplanned_fp, unplanned.fingerprint());
}

TEST(GraphFingerprint, StepGraphsOfAModel) {
    auto path = tiny_gguf("llama-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/llama-tiny";
    auto model = engine::load_model(*path);
    const auto fp = [&](int64_t T, bool all_logits) {
        return engine::build_step_graph(*model, {64, DType::F16}, {T, all_logits}).fingerprint();
    };
    EXPECT_EQ(fp(1, false), fp(1, false));
    EXPECT_NE(fp(1, false), fp(2, false));
    EXPECT_NE(fp(4, false), fp(4, true));
}

}  // namespace
}  // namespace tandem::test
