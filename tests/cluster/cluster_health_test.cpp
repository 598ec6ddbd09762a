// ClusterCoordinator::health() against what the test itself knows: the delay it injects on the
// links and the wall time of every decode() it makes. One tandem-node worker on loopback TCP
// serves two groups in turn, one on plain links and one whose every collective message waits a
// known delay on both ranks (the coordinator's simulated_delay). The figures are compared between
// the two groups of the same run, and against bounds that follow from where they are measured
// (inside decode(), around the all-reduce), so a busy machine cannot make the test fail.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "../engine/engine_fixture.h"
#include "node_process.h"
#include "tandem/net/cluster_coordinator.h"
#include "tp_reference.h"

namespace tandem::test {
namespace {

using namespace std::chrono;

const char* kSecret = "cluster-health-secret";
// One-way delay per message: well above what a loopback exchange of a tiny model's activations
// takes, so the delayed and the plain group cannot be confused.
constexpr microseconds kDelay{10000};

net::ClusterOptions options(const std::string& node, microseconds delay) {
    net::ClusterOptions co;
    co.nodes = {node};
    co.secret = kSecret;
    co.shares = {1, 1};
    co.threads = 1;
    co.engine.n_ctx = 64;
    co.engine.kv_type = DType::F32;
    co.simulated_delay = delay;
    return co;
}

void expect_neutral(const net::ClusterHealth& h) {
    EXPECT_EQ(h.steps, 0u);
    EXPECT_EQ(h.all_reduces, 0u);
    for (const auto& r : h.ranks) {
        EXPECT_EQ(r.step_ms, 0.0) << r.address;
        EXPECT_EQ(r.all_reduce_us, 0.0) << r.address;
    }
}

struct Observed {
    net::ClusterHealth health;
    double max_decode_ms = 0;  // the slowest decode() as the test timed it
    int decodes = 0;
};

// The prompt in one decode(), then one token per decode(): every decode() is one step graph.
Observed decode_steps(engine::Engine& e) {
    Observed run;
    std::vector<float> logits;
    auto timed = [&](std::span<const int32_t> ids) {
        const auto t0 = steady_clock::now();
        e.decode(ids, logits);
        run.max_decode_ms = std::max(
            run.max_decode_ms, duration<double, std::milli>(steady_clock::now() - t0).count());
        ++run.decodes;
    };
    timed(std::span(kIds).first(6));
    for (size_t t = 6; t < kIds.size(); ++t) timed(std::span(kIds).subspan(t, 1));
    return run;
}

// What holds for any group: counts match the decodes made, every figure is positive, and each
// is bounded by the one measured around it.
void expect_consistent(const Observed& run) {
    const auto& h = run.health;
    ASSERT_EQ(h.ranks.size(), 2u);
    EXPECT_TRUE(h.clustered);
    EXPECT_FALSE(h.broken);
    EXPECT_EQ(h.steps, uint64_t(run.decodes));
    ASSERT_GT(h.all_reduces, 0u);
    EXPECT_EQ(h.all_reduces % h.steps, 0u) << "every step graph has the same all-reduces";
    const auto& local = h.ranks[0];
    const auto& worker = h.ranks[1];
    EXPECT_EQ(local.address, "local");
    EXPECT_GT(local.step_ms, 0);
    EXPECT_GT(worker.step_ms, 0);
    EXPECT_GT(local.all_reduce_us, 0);
    EXPECT_GT(worker.all_reduce_us, 0);
    // Every sample is taken inside a decode() and each average mixes samples alone, so no
    // average exceeds the slowest decode(); the worker's last part arrives before rank 0's
    // gather returns, and its exchanges lie inside rank 0's all-reduce calls.
    constexpr double eps = 1e-9;
    EXPECT_LE(local.step_ms, run.max_decode_ms);
    EXPECT_LE(worker.step_ms, local.step_ms * (1 + eps));
    EXPECT_LE(worker.all_reduce_us, local.all_reduce_us * (1 + eps));
}

TEST(ClusterHealth, FollowsTheInjectedLinkDelayAndIsNeutralOutsideAGroup) {
    auto path = tiny_gguf("llama-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/llama-tiny";
    NodeProcess node(static_node_args(kSecret, temp_dir("health-cache").string()), "cluster port ");
    ASSERT_TRUE(node.port()) << "node did not start";

    Observed plain;
    {
        net::ClusterCoordinator c(*path, options(node.address(), microseconds(0)));
        const auto before = c.health();
        EXPECT_TRUE(before.clustered);
        ASSERT_EQ(before.ranks.size(), 2u);
        EXPECT_EQ(before.ranks[0].address, "local");
        EXPECT_EQ(before.ranks[1].address, node.address());
        EXPECT_DOUBLE_EQ(before.ranks[0].share + before.ranks[1].share, 1.0);
        expect_neutral(before);
        plain = decode_steps(c.engine());
        plain.health = c.health();
        expect_consistent(plain);
    }

    net::ClusterCoordinator c(*path, options(node.address(), kDelay));
    expect_neutral(c.health());
    Observed delayed = decode_steps(c.engine());
    delayed.health = c.health();
    expect_consistent(delayed);

    for (const auto* o : {&plain, &delayed})
        std::printf(
            "health: steps %llu, all-reduces %llu, step ms %.3f / %.3f (slowest decode %.3f), "
            "all-reduce us %.1f / %.1f (rank 0 / rank 1)\n",
            (unsigned long long)o->health.steps, (unsigned long long)o->health.all_reduces,
            o->health.ranks[0].step_ms, o->health.ranks[1].step_ms, o->max_decode_ms,
            o->health.ranks[0].all_reduce_us, o->health.ranks[1].all_reduce_us);
    const double delay_us = double(kDelay.count());
    const auto& pw = plain.health.ranks[1];
    const auto& dw = delayed.health.ranks[1];
    // Rank 0 sends first (after its delay), the worker answers after its own: at least one delay
    // per all-reduce more than on the plain link (two, less what the plain link took).
    EXPECT_GE(dw.all_reduce_us - pw.all_reduce_us, delay_us)
        << "plain " << pw.all_reduce_us << " us, delayed " << dw.all_reduce_us << " us";
    EXPECT_GE(dw.all_reduce_us, 2 * delay_us);
    // A step waits for all its all-reduces.
    const double per_step = double(delayed.health.all_reduces) / double(delayed.health.steps);
    EXPECT_GE(delayed.health.ranks[0].step_ms * 1e3, per_step * 2 * delay_us);
    EXPECT_GE(delayed.health.ranks[0].step_ms - plain.health.ranks[0].step_ms,
              per_step * delay_us / 1e3);

    // The group ends: the worker dies, the next step fails and marks the group broken; after
    // recover() the whole model runs here and nothing is timed any more.
    node.kill(SIGKILL);
    std::vector<float> logits;
    EXPECT_THROW(c.engine().decode(std::span(kIds).first(1), logits), Error);
    EXPECT_TRUE(c.health().broken);
    c.recover();
    const auto after = c.health();
    EXPECT_FALSE(after.clustered);
    EXPECT_FALSE(after.broken);
    ASSERT_EQ(after.ranks.size(), 1u);
    EXPECT_EQ(after.ranks[0].address, "local");
    expect_neutral(after);
    c.engine().clear();
    c.engine().decode(std::span(kIds).first(6), logits);
    expect_neutral(c.health());
}

}  // namespace
}  // namespace tandem::test
