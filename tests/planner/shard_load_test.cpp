// Shard-only loading: the shard's weights equal the engine loader's slices byte for byte, and a
// child process that loads shard k of N grows by the shard plus its planned KV/scratch (bytes
// read from /proc/self/io rchar, resident memory from /proc/self/statm), not by the model.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "fixtures.h"
#include "tandem/backend/backend.h"
#include "tandem/backend/registry.h"
#include "tandem/engine/engine.h"
#include "tandem/planner/memory_plan.h"
#include "tandem/planner/shard_loader.h"
#include "tandem/planner/shard_shape.h"
#include "test_models.h"

namespace tandem::planner {
namespace {

// Anonymous resident memory (resident minus file-backed pages): weights, KV and scratch are
// anonymous; code pages faulted in on first use of the engine are not what is measured.
uint64_t rss_bytes() {
    std::ifstream f("/proc/self/statm");
    uint64_t size = 0, resident = 0, shared = 0;
    f >> size >> resident >> shared;
    return (resident - shared) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

uint64_t rchar() {
    std::ifstream f("/proc/self/io");
    std::string key;
    uint64_t v = 0;
    while (f >> key >> v)
        if (key == "rchar:") return v;
    return 0;
}

const std::filesystem::path& model_path() {
    static const std::filesystem::path p = [] {
        auto out = test::temp_dir("planner-shard-load") / "llama-8kv.gguf";
        test::LlamaShape s;
        s.n_embd = 1536;
        s.n_ff = 4096;
        s.n_head = 24;
        s.n_vocab = 8192;
        test::write_llama(out, s);  // ~135 MB of q8_0
        return out;
    }();
    return p;
}

TEST(ShardLoad, WeightsEqualTheEngineLoadersSlices) {
    auto whole = engine::load_model(model_path());
    for (int n : {2, 3, 4})
        for (int rank = 0; rank < n; ++rank) {
            const auto shard = engine::ShardSpec::even(whole->hp, rank, n);
            auto ref = engine::load_model(whole->file, shard);
            ShardLoadStats st;
            auto got = load_shard(model_path(), shard, &st);
            const auto a = ref->weights(), b = got->weights();
            ASSERT_EQ(a.size(), b.size());
            for (size_t i = 0; i < a.size(); ++i) {
                ASSERT_EQ(a[i]->name, b[i]->name);
                ASSERT_EQ(a[i]->slot, b[i]->slot);
                ASSERT_EQ(a[i]->ne, b[i]->ne) << a[i]->name;
                ASSERT_EQ(a[i]->nbytes, b[i]->nbytes) << a[i]->name;
                ASSERT_EQ(std::memcmp(a[i]->data, b[i]->data, a[i]->nbytes), 0) << a[i]->name;
            }
            // Column slices are one range per row; merging joins everything contiguous.
            EXPECT_LT(st.n_reads, st.n_ranges);
            EXPECT_EQ(got->weight_bytes(), ref->weight_bytes());
            EXPECT_LE(st.bytes_read, got->weight_bytes() + 64 * st.n_reads);
        }
}

// Bytes of this process's address space mapped from `file` (/proc/self/maps).
uint64_t mapped_from(const std::filesystem::path& file) {
    std::ifstream f("/proc/self/maps");
    const std::string want = std::filesystem::canonical(file).string();
    uint64_t total = 0;
    for (std::string line; std::getline(f, line);) {
        const size_t slash = line.find('/');
        if (slash == std::string::npos || line.substr(slash) != want) continue;
        uint64_t lo = 0, hi = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2) total += hi - lo;
    }
    return total;
}

struct ChildReport {
    uint64_t read = 0, rss = 0, mapped = 0, ok = 0;
};

// Loads the shard and runs one prefill step in a fresh child; returns its growth.
ChildReport measure_in_child(const engine::ShardSpec& shard, const PlanOptions& o) {
    int fds[2];
    if (pipe(fds) != 0) return {};
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        ChildReport r;
        try {
            // The child inherits the parent's heap: free but resident pages would absorb its
            // allocations and hide them from RSS. Give them back and keep big blocks on mmap.
            // Backend discovery (plugins, e.g. lavapipe's LLVM) is process set-up, not the
            // model's footprint: do it before the baseline.
            (void)BackendRegistry::instance();
            mallopt(M_MMAP_THRESHOLD, 128 * 1024);
            malloc_trim(0);
            const uint64_t rss0 = rss_bytes(), read0 = rchar();
            const uint64_t mapped0 = mapped_from(model_path());  // the parent's model, inherited
            auto model = load_shard(model_path(), shard);
            r.mapped = mapped_from(model_path()) - mapped0;  // nothing more of the file mapped
            engine::Engine eng(model, create_backend("cpu", 0, BackendOptions{1}),
                               {o.n_ctx, o.kv_type, o.n_batch});
            std::vector<int32_t> ids(static_cast<size_t>(o.n_batch), 5);
            std::vector<float> logits;
            eng.decode(ids, logits);
            r.read = rchar() - read0;
            r.rss = rss_bytes() - rss0;
            r.ok = 1;
        } catch (...) {
        }
        [[maybe_unused]] auto w = write(fds[1], &r, sizeof r);
        _exit(0);
    }
    close(fds[1]);
    ChildReport r;
    [[maybe_unused]] auto got = read(fds[0], &r, sizeof r);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return r;
}

TEST(ShardLoad, ChildGrowsByShardNotModel) {
    auto whole = engine::load_model(model_path());
    const uint64_t model_bytes = whole->weight_bytes();
    const PlanOptions o{4096, 16, DType::F16, false};
    for (int n : {2, 3, 4})
        for (int rank : {0, n - 1}) {
            const auto shard = engine::ShardSpec::even(whole->hp, rank, n);
            const DevicePlan plan = plan_device(*whole, shard, o, 0);
            const ChildReport r = measure_in_child(shard, o);
            ASSERT_EQ(r.ok, 1u) << "child failed for shard " << rank << "/" << n;
            const double expect_rss =
                double(plan.weight_bytes + plan.kv_bytes + plan.scratch_bytes);
            std::printf(
                "  shard %d/%d: read %.1f MB (shard %.1f MB), RSS +%.1f MB (planned "
                "%.1f MB), model %.1f MB\n",
                rank, n, r.read / 1e6, plan.weight_bytes / 1e6, r.rss / 1e6, expect_rss / 1e6,
                model_bytes / 1e6);
            EXPECT_EQ(r.mapped, 0u) << "load_shard left part of the model file mapped";
            EXPECT_NEAR(double(r.read), double(plan.weight_bytes), 0.05 * plan.weight_bytes);
            EXPECT_NEAR(double(r.rss), expect_rss, 0.05 * expect_rss);
            EXPECT_LT(double(r.rss), 0.75 * double(model_bytes));
        }
}

}  // namespace
}  // namespace tandem::planner
