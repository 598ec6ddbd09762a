// Fit: the largest context that fits, for one device, equal devices and unequal devices; shares
// follow the free memory; a model that cannot fit is refused with the device named, and deciding
// that reads no weight data.
#include <gtest/gtest.h>

#include <unistd.h>
#include <fstream>

#include "fixtures.h"
#include "tandem/common/error.h"
#include "tandem/planner/fit.h"
#include "tandem/planner/shard_shape.h"
#include "test_models.h"

namespace tandem::planner {
namespace {

std::shared_ptr<engine::Model> test_model() {
    static std::shared_ptr<engine::Model> m = [] {
        auto out = test::temp_dir("planner-fit") / "llama-8kv.gguf";
        test::write_llama(out, {});  // n_ctx_train 4096
        return engine::load_model(out);
    }();
    return m;
}

constexpr double kMargin = 0.05;

// Free memory at which exactly `plan` fits after the margin.
uint64_t free_for(const DevicePlan& plan) {
    return static_cast<uint64_t>(double(plan.total()) / (1.0 - kMargin)) + 1;
}

bool fits(const DevicePlan& p, uint64_t free) {
    return p.total() <= usable_bytes({"", free, 0}, kMargin);
}

FitOptions options() {
    FitOptions o;
    o.n_batch = 64;
    o.margin = kMargin;
    return o;
}

TEST(Shares, ProportionalInWholeUnits) {
    const auto& hp = test_model()->hp;
    const auto a = shard_by_shares(hp, 0, {3, 1}), b = shard_by_shares(hp, 1, {3, 1});
    EXPECT_EQ(a.kv_head_begin, 0);
    EXPECT_EQ(a.kv_head_end, 6);
    EXPECT_EQ(b.kv_head_begin, 6);
    EXPECT_EQ(b.kv_head_end, 8);
    EXPECT_EQ(a.ff_end, 9 * 256);  // 3072 = 12 blocks of 256
    EXPECT_EQ(b.ff_begin, 9 * 256);
    EXPECT_EQ(b.ff_end, 3072);
    EXPECT_EQ(a.vocab_end, 3072);
    EXPECT_EQ(b.vocab_end, 4096);
    // Every rank keeps at least one head even when its share is tiny.
    const auto c = shard_by_shares(hp, 1, {1000, 1});
    EXPECT_EQ(c.kv_head_end - c.kv_head_begin, 1);
    EXPECT_THROW(shard_by_shares(hp, 0, std::vector<double>(17, 1.0)), Error);  // 16 heads
}

TEST(Fit, OneDeviceLargestContext) {
    auto m = test_model();
    const auto whole = engine::ShardSpec::whole(m->hp);
    const PlanOptions po{1000, 64, DType::F16, false};
    const uint64_t free = free_for(plan_device(*m, whole, po, 64 << 20));
    const FitResult r = fit(*m, {{"cpu", free, 64 << 20}}, options());
    EXPECT_EQ(r.n_ctx, 768);  // largest multiple of 256 below 1000
    ASSERT_EQ(r.devices.size(), 1u);
    EXPECT_TRUE(fits(r.devices[0], free));
    EXPECT_FALSE(fits(plan_device(*m, whole, {1024, 64, DType::F16, false}, 64 << 20), free));
    // Plenty of memory: the training context.
    EXPECT_EQ(fit(*m, {{"cpu", uint64_t(8) << 30, 0}}, options()).n_ctx, 4096);
}

TEST(Fit, EqualDevicesSplitEvenly) {
    auto m = test_model();
    const PlanOptions po{2000, 64, DType::F16, false};
    uint64_t free = 0;
    for (int k = 0; k < 2; ++k)
        free =
            std::max(free, free_for(plan_device(*m, engine::ShardSpec::even(m->hp, k, 2), po, 0)));
    const FitResult r = fit(*m, {{"A", free, 0}, {"B", free, 0}}, options());
    EXPECT_EQ(r.n_ctx, 1792);
    ASSERT_EQ(r.shares.size(), 2u);
    EXPECT_DOUBLE_EQ(r.shares[0], 0.5);
    for (const DevicePlan& p : r.devices) {
        EXPECT_TRUE(fits(p, free)) << p.device;
        EXPECT_EQ(p.shard.kv_head_end - p.shard.kv_head_begin, 4);
    }
}

TEST(Fit, UnequalDevicesGetUnequalShares) {
    auto m = test_model();
    // A has three times B's memory: an even split is limited by B, the fit gives A more.
    const uint64_t b_free = free_for(
        plan_device(*m, engine::ShardSpec::even(m->hp, 1, 2), {512, 64, DType::F16, false}, 0));
    const std::vector<DeviceBudget> devs{{"A", 3 * b_free, 0}, {"B", b_free, 0}};
    const FitResult r = fit(*m, devs, options());
    ASSERT_EQ(r.devices.size(), 2u);
    EXPECT_GT(r.shares[0], r.shares[1]);
    EXPECT_GT(r.devices[0].weight_bytes, r.devices[1].weight_bytes);
    EXPECT_TRUE(fits(r.devices[0], devs[0].free_bytes));
    EXPECT_TRUE(fits(r.devices[1], devs[1].free_bytes));
    EXPECT_GT(r.n_ctx, 512);  // the even split tops out at 512
    // Largest: one step more does not fit with these shares.
    bool next_fits = true;
    for (int k = 0; k < 2; ++k)
        next_fits &= fits(plan_device(*m, shard_by_shares(m->hp, k, r.shares),
                                      {r.n_ctx + 256, 64, DType::F16, false}, 0),
                          devs[static_cast<size_t>(k)].free_bytes);
    EXPECT_TRUE(r.n_ctx == 4096 || !next_fits);
}

uint64_t anon_rss() {
    std::ifstream f("/proc/self/statm");
    uint64_t size = 0, resident = 0, shared = 0;
    f >> size >> resident >> shared;
    return (resident - shared) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

TEST(Fit, RefusesBeforeAllocatingAndNamesTheDevice) {
    auto out = test::temp_dir("planner-refuse") / "m.gguf";
    test::write_llama(out, {});
    const uint64_t rss1 = anon_rss();
    auto m = engine::load_model(out);  // views into the mapping: nothing read
    const uint64_t need_b =
        plan_device(*m, engine::ShardSpec::even(m->hp, 1, 2), {256, 64, DType::F16, false}, 0)
            .total();
    try {
        fit(*m, {{"node A", uint64_t(1) << 30, 0}, {"node B", need_b / 4, 0}}, options());
        FAIL() << "fit accepted a device with a quarter of the memory it needs";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("does not fit: needs "), std::string::npos) << msg;
        EXPECT_NE(msg.find(" on node B, "), std::string::npos) << msg;
        EXPECT_NE(msg.find(" free"), std::string::npos) << msg;
    }
    // Exactly this context: refused when it does not fit anywhere.
    FitOptions o = options();
    o.n_ctx = 4096;
    const uint64_t small =
        plan_device(*m, engine::ShardSpec::whole(m->hp), {1024, 64, DType::F16, false}, 0).total();
    EXPECT_THROW(fit(*m, {{"cpu", small, 0}}, o), Error);
    // Planning touched no weight data: anonymous memory grew by far less than the model.
    EXPECT_LT(anon_rss() - rss1, m->weight_bytes() / 10);
}

}  // namespace
}  // namespace tandem::planner
