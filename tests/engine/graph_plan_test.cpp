// The scratch planner: activations whose lifetimes overlap never share bytes, a node's output
// never aliases its inputs, and reuse keeps the peak well under the sum of all activations.
#include <gtest/gtest.h>

#include "engine_fixture.h"

namespace tandem::test {
namespace {

TEST(GraphPlan, LiveActivationsNeverOverlap) {
    for (const char* name : {"llama-tiny", "qwen3moe-tiny", "gemma3-tiny"}) {
        auto path = tiny_gguf(name);
        if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/" << name;
        auto model = engine::load_model(*path);
        for (int64_t T : {1, 9}) {
            Graph g = engine::build_step_graph(*model, {64, DType::F16}, {T, T > 1});
            const auto& ts = g.tensors();
            const auto& ns = g.nodes();
            std::vector<int> first(ts.size(), -1), last(ts.size(), -1);
            for (size_t k = 0; k < ns.size(); ++k) {
                if (first[ns[k].out] < 0) first[ns[k].out] = int(k);
                last[ns[k].out] = std::max(last[ns[k].out], int(k));
                for (TensorId s : ns[k].src)
                    if (s != kNoTensor) last[s] = std::max(last[s], int(k));
            }
            uint64_t total = 0;
            for (size_t a = 0; a < ts.size(); ++a) {
                if (ts[a].role != TensorRole::Activation || first[a] < 0) continue;
                total += ts[a].nbytes();
                EXPECT_LE(ts[a].offset + ts[a].nbytes(), g.scratch_bytes());
                for (size_t b = a + 1; b < ts.size(); ++b) {
                    if (ts[b].role != TensorRole::Activation || first[b] < 0) continue;
                    // Lifetimes [first, last] that touch (one's last read is the other's write)
                    // overlap too.
                    const bool live_together = first[a] <= last[b] && first[b] <= last[a];
                    const bool bytes_overlap = ts[a].offset < ts[b].offset + ts[b].nbytes() &&
                                               ts[b].offset < ts[a].offset + ts[a].nbytes();
                    EXPECT_FALSE(live_together && bytes_overlap)
                        << name << " T=" << T << ": " << ts[a].name << " and " << ts[b].name;
                }
            }
            EXPECT_LT(g.scratch_bytes() * 4, total)
                << name << " T=" << T << " peak " << g.scratch_bytes();
        }
    }
}

}  // namespace
}  // namespace tandem::test
