// The tensor-parallel hooks on every backend: AllReduce and AllGather are the identity without a
// collective (one rank), and with one go through it (a fake second rank with known data), also
// after a device op wrote the reduced tensor; exact results, and (GPU) equal to the CPU backend.
#include "op_harness.h"
#include "tandem/backend/collective.h"

namespace tandem::test {
namespace {

class CollectiveOps : public BackendOpTest {};

// Rank 0 of two: the other rank adds i to element i (all-reduce) and contributes half as many
// columns, all -1 - i (all-gather).
class FakeTwoRanks : public Collective {
  public:
    int rank() const override { return 0; }
    int n_ranks() const override { return 2; }
    void all_reduce_sum(float* d, size_t n) override {
        for (size_t i = 0; i < n; ++i) d[i] += float(i);
    }
    void all_gather(const float* local, size_t n, std::vector<float>& all,
                    std::vector<size_t>& sizes) override {
        all.assign(local, local + n);
        for (size_t i = 0; i < n / 2; ++i) all.push_back(-1.0f - float(i));
        sizes = {n, n / 2};
    }
};

TEST_P(CollectiveOps, AllReduceAndAllGather) {
    auto x = random_floats(2 * 6, 40);
    for (bool with_collective : {false, true}) {
        for (float pre_scale : {1.0f, 2.0f}) {  // 2: a device op writes the reduced tensor first
            // Outputs: the reduced [2][6] and the gathered [2][6 or 9] tensors.
            auto run = [&](Backend& b, std::vector<float>& reduced, std::vector<float>& gathered) {
                FakeTwoRanks coll;
                b.set_collective(with_collective ? &coll : nullptr);
                OpGraph g;
                TensorId in = g.input(x.data(), 6, 2);
                TensorId a = g.g.activation("a", 6, 2);
                g.node(Op::Copy, a, {in});
                if (pre_scale != 1.0f) g.node(Op::Scale, a, {a}, {0, 0, 0, 0}, {pre_scale, 0});
                g.node(Op::AllReduce, a, {a});
                g.node(Op::Copy, g.output(reduced, 6, 2), {a});
                g.node(Op::AllGather, g.output(gathered, with_collective ? 9 : 6, 2), {in});
                g.run(b);
                b.set_collective(nullptr);
            };
            std::vector<float> reduced, gathered;
            run(*be, reduced, gathered);
            const int w = with_collective ? 9 : 6;
            for (int r = 0; r < 2; ++r) {
                for (int c = 0; c < 6; ++c) {
                    EXPECT_EQ(reduced[r * 6 + c], pre_scale * x[r * 6 + c] +
                                                      (with_collective ? float(r * 6 + c) : 0.0f));
                    EXPECT_EQ(gathered[r * w + c], x[r * 6 + c]);  // this rank's columns first
                }
                for (int c = 6; c < w; ++c)  // then the other rank's, row by row
                    EXPECT_EQ(gathered[r * w + c], -1.0f - float(r * 3 + c - 6));
            }
            if (gpu()) {
                auto cpu = make_backend("cpu", 2);
                std::vector<float> reduced_cpu, gathered_cpu;
                run(*cpu, reduced_cpu, gathered_cpu);
                EXPECT_EQ(reduced, reduced_cpu);
                EXPECT_EQ(gathered, gathered_cpu);
            }
        }
    }
}

TANDEM_OP_SUITE(CollectiveOps);

}  // namespace
}  // namespace tandem::test
