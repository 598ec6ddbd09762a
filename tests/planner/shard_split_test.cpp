// The two ways of splitting a model over ranks (ShardSpec::even, shard_by_shares) refuse the same
// impossible splits with the same words, each naming the count that is too small.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tandem/common/error.h"
#include "tandem/planner/shard_shape.h"

namespace tandem::planner {
namespace {

using engine::ShardSpec;
using ::testing::Eq;
using ::testing::ThrowsMessage;

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

auto refused(const std::string& why) {
    return ThrowsMessage<Error>(Eq(why));
}

TEST(ShardSplit, EvenAndBySharesRefuseAlike) {
    const auto hp = dense();
    const std::vector<double> two(2, 1.0), three(3, 1.0);
    EXPECT_THAT([&] { ShardSpec::even(hp, 2, 2); }, refused("shard: rank 2 of 2 invalid"));
    EXPECT_THAT([&] { shard_by_shares(hp, -1, two); }, refused("shard: rank -1 of 2 invalid"));
    EXPECT_THAT([&] { ShardSpec::even(hp, 0, 9); },
                refused("shard: 8 KV heads cannot be split 9 ways"));
    // By shares a KV head may be replicated, so only query heads bound the ranks.
    EXPECT_THAT([&] { shard_by_shares(hp, 0, std::vector<double>(17, 1.0)); },
                refused("shard: 16 attention heads cannot be split 17 ways"));
    EXPECT_THAT([&] { ShardSpec::even(hp, 0, 3); },
                refused("shard: FFN width 512 has fewer than 3 blocks of 256"));
    EXPECT_THAT([&] { shard_by_shares(hp, 0, three); },
                refused("shard: FFN width 512 has fewer than 3 blocks of 256"));
    EXPECT_THAT(
        [&] {
            shard_by_shares(hp, 0, {1, 0});
        },
        refused("shard: every share must be positive"));

    auto moe = hp;
    moe.n_ff = 4096;
    moe.n_expert = 2;
    moe.n_expert_used = 1;
    EXPECT_THAT([&] { ShardSpec::even(moe, 0, 3); },
                refused("shard: 2 experts cannot be split 3 ways"));
    EXPECT_THAT([&] { shard_by_shares(moe, 0, three); },
                refused("shard: 2 experts cannot be split 3 ways"));
    // What does split is not refused.
    EXPECT_NO_THROW(ShardSpec::even(moe, 1, 2));
    EXPECT_NO_THROW(shard_by_shares(moe, 1, two));
}

}  // namespace
}  // namespace tandem::planner
