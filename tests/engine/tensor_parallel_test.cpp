// A model split over N in-process ranks (each its own CPU backend and shard of heads, FFN
// columns, experts and vocabulary, joined by an in-memory collective) gives the logits of the
// unsplit model.
#include <barrier>
#include <thread>

#include "engine_fixture.h"
#include "tandem/backend/collective.h"
#include "tandem/common/error.h"

namespace tandem::test {
namespace {

class LocalGroup {
  public:
    explicit LocalGroup(int n) : n_(n), sync_(n), slots_(static_cast<size_t>(n)) {}

    class Rank : public Collective {
      public:
        Rank(LocalGroup& g, int r) : g_(g), r_(r) {}
        int rank() const override { return r_; }
        int n_ranks() const override { return g_.n_; }
        void all_reduce_sum(float* d, size_t n) override {
            g_.slots_[r_].assign(d, d + n);
            g_.sync_.arrive_and_wait();
            for (size_t i = 0; i < n; ++i) {
                float s = 0;
                for (int k = 0; k < g_.n_; ++k) s += g_.slots_[k][i];  // same order on every rank
                d[i] = s;
            }
            g_.sync_.arrive_and_wait();
        }
        void all_gather(const float* local, size_t n, std::vector<float>& all,
                        std::vector<size_t>& sizes) override {
            g_.slots_[r_].assign(local, local + n);
            g_.sync_.arrive_and_wait();
            all.clear();
            sizes.clear();
            for (int k = 0; k < g_.n_; ++k) {
                all.insert(all.end(), g_.slots_[k].begin(), g_.slots_[k].end());
                sizes.push_back(g_.slots_[k].size());
            }
            g_.sync_.arrive_and_wait();
        }

      private:
        LocalGroup& g_;
        int r_;
    };

  private:
    int n_;
    std::barrier<> sync_;
    std::vector<std::vector<float>> slots_;
};

void check_split(const std::string& name, int n_ranks, int64_t ff_align) {
    auto path = tiny_gguf(name);
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/" << name;
    auto file = std::make_shared<gguf::File>(gguf::File::open(*path));
    const auto hp = engine::read_hparams(*file);
    std::vector<int32_t> ids = {1, 17, 300, 42, 42, 7, 999, 3, 250, 11};
    std::vector<float> whole;
    make_engine(engine::load_model(file, engine::ShardSpec::whole(hp)))->decode(ids, whole, true);

    LocalGroup group(n_ranks);
    std::vector<std::vector<float>> out(static_cast<size_t>(n_ranks));
    std::vector<std::thread> threads;
    std::vector<std::string> errors(static_cast<size_t>(n_ranks));
    for (int r = 0; r < n_ranks; ++r)
        threads.emplace_back([&, r] {
            try {
                auto shard = engine::ShardSpec::even(hp, r, n_ranks, ff_align);
                auto model = engine::load_model(file, shard);
                auto e = make_engine(model, 64, DType::F32, 1);
                LocalGroup::Rank rank(group, r);
                e->set_collective(&rank);
                e->decode(std::span(ids).first(6), out[r], true);  // prefill, then decode steps
                std::vector<float> step;
                for (size_t t = 6; t < ids.size(); ++t) {
                    e->decode(std::span(ids).subspan(t, 1), step);
                    out[r].insert(out[r].end(), step.begin(), step.end());
                }
            } catch (const std::exception& ex) {
                errors[r] = ex.what();
            }
        });
    for (auto& t : threads) t.join();
    for (int r = 0; r < n_ranks; ++r) {
        ASSERT_EQ(errors[r], "") << "rank " << r;
        EXPECT_LT(max_rel_row_error(out[r], whole, hp.n_vocab), 1e-5)
            << name << " rank " << r << " of " << n_ranks;
    }
}

TEST(TensorParallel, LlamaTwoRanks) {
    check_split("llama-tiny", 2, 128);
}
TEST(TensorParallel, Qwen2TwoRanksWithBiases) {
    check_split("qwen2-tiny", 2, 128);
}
TEST(TensorParallel, Qwen3MoeTwoRanksSplitsExperts) {
    check_split("qwen3moe-tiny", 2, 128);
}

TEST(TensorParallel, ShardSpecRejectsImpossibleSplits) {
    engine::HParams hp;
    hp.n_kv_head = 1;
    hp.n_head = 4;
    hp.n_ff = 512;
    hp.n_vocab = 1000;
    EXPECT_THROW(engine::ShardSpec::even(hp, 0, 2), Error);  // one KV head
    hp.n_kv_head = 2;
    auto s0 = engine::ShardSpec::even(hp, 0, 2, 256), s1 = engine::ShardSpec::even(hp, 1, 2, 256);
    EXPECT_EQ(s0.ff_end, 256);
    EXPECT_EQ(s1.ff_begin, 256);
    EXPECT_EQ(s1.ff_end, 512);
    EXPECT_EQ(s0.vocab_end, s1.vocab_begin);
    EXPECT_EQ(s1.vocab_end, 1000);
    EXPECT_THROW(engine::ShardSpec::even(hp, 2, 2), Error);
}

}  // namespace
}  // namespace tandem::test
