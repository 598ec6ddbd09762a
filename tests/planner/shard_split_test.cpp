// The two ways of splitting a model over ranks (ShardSpec::even, shard_by_shares) refuse the same
// impossible splits with the same words, each naming the count that is too small.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "tandem/common/error.h"
#include "tandem/planner/shard_shape.h"

namespace tandem::planner {
namespace {

// Dense: 16 query heads over 8 KV heads, 512 FFN columns (2 blocks of 256).
engine::HParams dense() {
    engine::HParams hp;
    hp.n_vocab = 100;
    hp.n_embd = 64;
    hp.n_layer = 1;
    hp.n_head = 16;
    hp.n_kv_head = 8;
    hp.head_dim = 4;
    hp.n_ff = 512;
    return hp;
}

std::string error_of(const std::function<void()>& split) {
    try {
        split();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(ShardSplit, EvenAndBySharesRefuseAlike) {
    const auto hp = dense();
    const std::vector<double> two(2, 1.0), three(3, 1.0);
    EXPECT_EQ(error_of([&] { engine::ShardSpec::even(hp, 2, 2); }), "shard: rank 2 of 2 invalid");
    EXPECT_EQ(error_of([&] { shard_by_shares(hp, -1, two); }), "shard: rank -1 of 2 invalid");
    EXPECT_EQ(error_of([&] { engine::ShardSpec::even(hp, 0, 9); }),
              "shard: 8 KV heads cannot be split 9 ways");
    // By shares a KV head may be replicated, so only query heads bound the ranks.
    EXPECT_EQ(error_of([&] { shard_by_shares(hp, 0, std::vector<double>(17, 1.0)); }),
              "shard: 16 attention heads cannot be split 17 ways");
    EXPECT_EQ(error_of([&] { engine::ShardSpec::even(hp, 0, 3); }),
              "shard: FFN width 512 has fewer than 3 blocks of 256");
    EXPECT_EQ(error_of([&] { shard_by_shares(hp, 0, three); }),
              "shard: FFN width 512 has fewer than 3 blocks of 256");
    EXPECT_EQ(error_of([&] {
                  shard_by_shares(hp, 0, {1, 0});
              }),
              "shard: every share must be positive");

    auto moe = hp;
    moe.n_ff = 4096;
    moe.n_expert = 2;
    moe.n_expert_used = 1;
    EXPECT_EQ(error_of([&] { engine::ShardSpec::even(moe, 0, 3); }),
              "shard: 2 experts cannot be split 3 ways");
    EXPECT_EQ(error_of([&] { shard_by_shares(moe, 0, three); }),
              "shard: 2 experts cannot be split 3 ways");
    // What does split is not refused.
    EXPECT_EQ(error_of([&] { engine::ShardSpec::even(moe, 1, 2); }), "(no error)");
    EXPECT_EQ(error_of([&] { shard_by_shares(moe, 1, two); }), "(no error)");
}

}  // namespace
}  // namespace tandem::planner
