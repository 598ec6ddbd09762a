// A model split over ranks joined by a real loopback TCP mesh gives the logits of the unsplit
// model (itself checked against HF transformers in test-engine), and greedy continuations match.
// Unequal shares and impossible splits are covered; a rank that stops fails the step in < 2 s and
// the coordinator then answers locally.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "../engine/engine_fixture.h"
#include "mesh_fixture.h"
#include "tp_reference.h"
#include "tandem/planner/shard_shape.h"

namespace tandem::test {
namespace {

void check_split(const std::string& name, const std::vector<double>& shares, int64_t ff_align,
                 net::WireType wire = net::WireType::F32, double tol = 1e-5) {
    auto path = tiny_gguf(name);
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/" << name;
    auto file = std::make_shared<gguf::File>(gguf::File::open(*path));
    const auto hp = engine::read_hparams(*file);
    std::vector<float> whole;
    std::vector<int32_t> whole_greedy;
    auto single =
        make_engine(engine::load_model(file, engine::ShardSpec::whole(hp)), 64, DType::F32, 1);
    run_engine(*single, whole, whole_greedy);

    const int n = static_cast<int>(shares.size());
    std::vector<std::vector<float>> out(static_cast<size_t>(n));
    std::vector<std::vector<int32_t>> greedy(static_cast<size_t>(n));
    net::CollectiveOptions co;
    co.wire = wire;
    auto errors = run_group(
        n,
        [&](int r, net::TransportCollective& c) {
            auto shard = planner::shard_by_shares(hp, r, shares, ff_align);
            auto e = make_engine(engine::load_model(file, shard), 64, DType::F32, 1);
            e->set_collective(&c);
            run_engine(*e, out[r], greedy[r]);
        },
        co);
    for (int r = 0; r < n; ++r) {
        ASSERT_EQ(errors[r], "") << "rank " << r;
        EXPECT_LT(max_rel_row_error(out[r], whole, hp.n_vocab), tol) << name << " rank " << r;
        EXPECT_EQ(greedy[r], whole_greedy) << name << " rank " << r;
    }
}

TEST(ClusterTcp, LlamaTwoEqualRanks) {
    check_split("llama-tiny", {1, 1}, 128);
}
TEST(ClusterTcp, LlamaTwoUnequalRanks) {
    // 640 FFN columns in blocks of 128: shares 1:3 give 128 / 512 columns (checked below).
    auto path = tiny_gguf("llama-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/llama-tiny";
    auto file = std::make_shared<gguf::File>(gguf::File::open(*path));
    const auto hp = engine::read_hparams(*file);
    auto s0 = planner::shard_by_shares(hp, 0, {1, 3}, 128);
    EXPECT_LT(s0.ff_end - s0.ff_begin, hp.n_ff / 2);
    check_split("llama-tiny", {1, 3}, 128);
}
TEST(ClusterTcp, Qwen2TwoRanks) {
    check_split("qwen2-tiny", {1, 1}, 128);
}
TEST(ClusterTcp, Qwen3TwoRanks) {
    check_split("qwen3-tiny", {1, 1}, 128);
}
TEST(ClusterTcp, Qwen3MoeTwoRanksSplitsExperts) {
    check_split("qwen3moe-tiny", {2, 1}, 128);
}
TEST(ClusterTcp, Bf16WireStaysClose) {
    // bf16 keeps 8 mantissa bits: the partial sums are rounded, so the logits move by ~1e-3.
    check_split("llama-tiny", {1, 1}, 128, net::WireType::BF16, 2e-2);
}

// Three ranks with unequal shares: every hf-tiny model has <= 2 KV heads, so some KV heads are
// replicated on two ranks while the Q heads stay split (each rank within one GQA group).
TEST(ClusterTcp, LlamaThreeUnequalRanksReplicateKvHeads) {
    auto path = tiny_gguf("llama-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/llama-tiny";
    const auto hp = engine::read_hparams(gguf::File::open(*path));
    // 8 Q heads in 2 groups of 4, shares 2:1:1: rank 0 takes group 0, ranks 1 and 2 share
    // group 1 (KV head 1 on both).
    const std::vector<double> shares = {2, 1, 1};
    auto s0 = planner::shard_by_shares(hp, 0, shares, 128);
    auto s1 = planner::shard_by_shares(hp, 1, shares, 128);
    auto s2 = planner::shard_by_shares(hp, 2, shares, 128);
    EXPECT_EQ(s0.q_begin(hp), 0);
    EXPECT_EQ(s0.q_end(hp), 4);
    EXPECT_EQ(s1.q_begin(hp), 4);
    EXPECT_EQ(s1.q_end(hp), 6);
    EXPECT_EQ(s2.q_end(hp), 8);
    EXPECT_EQ(s1.kv_head_begin, 1);
    EXPECT_EQ(s2.kv_head_begin, 1);
    check_split("llama-tiny", shares, 128);
}
TEST(ClusterTcp, Qwen2ThreeUnequalRanks) {
    check_split("qwen2-tiny", {1, 2, 1}, 128);
}
TEST(ClusterTcp, Qwen3ThreeUnequalRanks) {
    check_split("qwen3-tiny", {2, 1, 1}, 128);
}
TEST(ClusterTcp, Qwen3MoeThreeUnequalRanks) {
    check_split("qwen3moe-tiny", {2, 1, 1}, 128);
}
TEST(ClusterTcp, Gemma3TwoRanksShareItsOneKvHead) {
    check_split("gemma3-tiny", {1, 1}, 128);
}
TEST(ClusterTcp, Gemma3ThreeUnequalRanks) {
    check_split("gemma3-tiny", {2, 1, 1}, 128);
}
TEST(ClusterTcp, MoreRanksThanHeadsIsRefusedClearly) {
    auto path = tiny_gguf("qwen2-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/qwen2-tiny";
    const auto hp = engine::read_hparams(gguf::File::open(*path));
    try {
        planner::shard_by_shares(hp, 0, std::vector<double>(5, 1.0), 64);
        FAIL() << "5 ranks of 4 heads accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("4 attention heads cannot be split 5 ways"),
                  std::string::npos)
            << e.what();
    }
}

TEST(ClusterTcp, StoppedRankFailsTheStepFastAndCoordinatorAnswersLocally) {
    using namespace std::chrono;
    using seconds_t = std::chrono::seconds;
    auto path = tiny_gguf("llama-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/llama-tiny";
    auto file = std::make_shared<gguf::File>(gguf::File::open(*path));
    const auto hp = engine::read_hparams(*file);
    std::string error;
    double seconds = 99;
    std::vector<int32_t> generated;  // what the coordinator produced before the fault
    auto errors = run_group(2, [&](int r, net::TransportCollective& c) {
        auto e = make_engine(engine::load_model(file, engine::ShardSpec::even(hp, r, 2, 128)), 64,
                             DType::F32, 1);
        e->set_collective(&c);
        std::vector<float> logits;
        e->decode(std::span(kIds).first(4), logits);
        if (r == 1) {  // the node stalls mid-generation
            std::this_thread::sleep_for(seconds_t(3));
            return;
        }
        generated.push_back(argmax(logits.data(), e->n_vocab()));
        const auto t0 = steady_clock::now();
        try {
            e->decode(std::span(generated).last(1), logits);
        } catch (const Error& ex) {
            error = ex.what();
        }
        seconds = duration<double>(steady_clock::now() - t0).count();
    });
    EXPECT_EQ(errors[0], "");
    EXPECT_NE(error.find("rank 1"), std::string::npos) << error;
    EXPECT_LT(seconds, 2.5);
    ASSERT_EQ(generated.size(), 1u);  // nothing generated is lost

    // The coordinator goes on alone with the whole model: the same next token as a run that
    // never had a cluster.
    std::vector<int32_t> ctx(kIds.begin(), kIds.begin() + 4);
    ctx.push_back(generated[0]);
    std::vector<float> local, reference;
    make_engine(engine::load_model(file, engine::ShardSpec::whole(hp)), 64, DType::F32, 1)
        ->decode(ctx, local);
    std::vector<int32_t> ref_ctx(kIds.begin(), kIds.begin() + 4);
    auto ref =
        make_engine(engine::load_model(file, engine::ShardSpec::whole(hp)), 64, DType::F32, 1);
    ref->decode(ref_ctx, reference);
    EXPECT_EQ(argmax(reference.data(), hp.n_vocab), generated[0]);
    ref->decode(std::span(generated), reference);
    EXPECT_LT(max_rel_row_error(local, reference, hp.n_vocab), 1e-5);
}

}  // namespace
}  // namespace tandem::test
