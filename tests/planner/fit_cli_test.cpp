// tandem-cli fit: the table for a split, and the refusal (exit 1, device named) when a node is
// short. Skips when tandem-cli is not built in this build folder.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>

#include "fixtures.h"
#include "test_models.h"

namespace tandem::planner {
namespace {

struct CliRun {
    int rc = -1;
    std::string out;
};

CliRun run(const std::string& cmd) {
    CliRun r;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf{};
    size_t n = 0;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = pclose(p);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

TEST(FitCli, TableAndRefusal) {
    const auto cli = test::bin_dir() / "tandem-cli";
    if (!std::filesystem::exists(cli)) GTEST_SKIP() << "tandem-cli not built: " << cli;
    const auto model = test::temp_dir("planner-cli") / "m.gguf";
    test::write_llama(model, {});
    const std::string base = cli.string() + " fit -m " + model.string();
    const CliRun ok = run(base + " --batch 64 --cluster-devices \"A:256MiB,B:160MiB\"");
    ASSERT_EQ(ok.rc, 0) << ok.out;
    EXPECT_NE(ok.out.find("(largest that fits)"), std::string::npos) << ok.out;
    EXPECT_NE(ok.out.find("\nA "), std::string::npos) << ok.out;
    EXPECT_NE(ok.out.find("\nB "), std::string::npos) << ok.out;
    const CliRun no = run(base + " --cluster-devices \"A:1GiB,B:70MiB\"");
    EXPECT_EQ(no.rc, 1) << no.out;
    EXPECT_NE(no.out.find("error: does not fit: needs "), std::string::npos) << no.out;
    EXPECT_NE(no.out.find(" on B, "), std::string::npos) << no.out;
    const CliRun bad = run(base + " --cluster-devices \"A:12XB\"");
    EXPECT_EQ(bad.rc, 1) << bad.out;
    EXPECT_NE(bad.out.find("unknown unit 'xb'"), std::string::npos) << bad.out;
}

// Running a model whose plan does not fit the device's free memory is refused before anything
// is allocated: a 4M-token f16 cache of this model needs ~32 GiB of KV alone, more than any CI
// machine has free (the CPU device reports MemAvailable); the refusal comes at once, with the
// planner's figures, instead of an allocation failure or the OOM killer.
TEST(FitCli, RunRefusesAModelThatDoesNotFit) {
    const auto cli = test::bin_dir() / "tandem-cli";
    if (!std::filesystem::exists(cli)) GTEST_SKIP() << "tandem-cli not built: " << cli;
    const auto model = test::temp_dir("planner-cli-run") / "m.gguf";
    test::write_llama(model, {});
    const std::string base = cli.string() + " generate -m " + model.string() + " --ids 1,2 -n 1";
    const CliRun no = run(base + " --ctx 4000000");
    EXPECT_EQ(no.rc, 1) << no.out;
    EXPECT_NE(no.out.find("error: does not fit: needs "), std::string::npos) << no.out;
    EXPECT_NE(no.out.find(" on cpu:0, "), std::string::npos) << no.out;
    EXPECT_NE(no.out.find("for 4000000 tokens"), std::string::npos) << no.out;
    // The same model at a context that fits runs.
    const CliRun ok = run(base + " --ctx 256");
    EXPECT_EQ(ok.rc, 0) << ok.out;
}

}  // namespace
}  // namespace tandem::planner
