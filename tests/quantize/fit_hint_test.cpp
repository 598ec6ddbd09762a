// Fit hints of the library lists: a local file is planned by the memory planner against the
// given devices (fits / does not fit at the default context, split over a cluster), a remote
// file is judged by its size alone, and an unreadable file says why instead of throwing.
#include <gtest/gtest.h>

#include <fstream>

#include "quantize_test_util.h"
#include "tandem/library/fit_hint.h"

namespace tandem::test {
namespace {

constexpr uint64_t MiB = 1ull << 20, GiB = 1ull << 30;

planner::DeviceBudget device(const std::string& name, uint64_t free) {
    return {name, free, 0};
}

TEST(FitHint, LocalFilePlannedAtDefaultContext) {
    auto input = tiny_f32("qwen2-tiny");
    if (!input) GTEST_SKIP() << "fixture hf-tiny/qwen2-tiny not found";
    const auto record = library::inspect_gguf({*input});

    library::FitHintOptions o;
    o.n_ctx = 4096;
    o.local = {device("big", 64 * GiB)};
    const auto fits = library::fit_hint(record, o);
    ASSERT_EQ(fits.verdict, library::FitVerdict::Fits) << fits.text;
    EXPECT_EQ(fits.n_ctx, std::min<int64_t>(4096, int64_t(record.context_length)));
    // The plan holds at least the weights (the f32 tensors: most of the file) and a KV cache.
    EXPECT_GT(fits.need_bytes, record.size_bytes * 9 / 10);
    EXPECT_NE(fits.text.find("fits"), std::string::npos);

    // Just enough memory for that plan (plus the planner's 5 % margin) fits; half of it not.
    o.local = {device("exact", uint64_t(double(fits.need_bytes) / 0.95) + MiB)};
    EXPECT_EQ(library::fit_hint(record, o).verdict, library::FitVerdict::Fits);
    o.local = {device("small", fits.need_bytes / 2)};
    const auto too_big = library::fit_hint(record, o);
    EXPECT_EQ(too_big.verdict, library::FitVerdict::TooBig);
    EXPECT_NE(too_big.text.find("does not fit"), std::string::npos) << too_big.text;

    // Two devices with 90 % each: the single device is short, the split fits.
    o.local = {device("A", fits.need_bytes * 9 / 10)};
    o.cluster = {device("A", fits.need_bytes * 9 / 10), device("B", fits.need_bytes * 9 / 10)};
    EXPECT_EQ(library::fit_hint(record, o).verdict, library::FitVerdict::TooBig);
    const auto split = library::cluster_fit_hint(record, o);
    EXPECT_EQ(split.verdict, library::FitVerdict::Fits) << split.text;
    EXPECT_LT(split.need_bytes, fits.need_bytes);
    o.cluster.clear();
    EXPECT_EQ(library::cluster_fit_hint(record, o).verdict, library::FitVerdict::Unknown);
}

TEST(FitHint, UnreadableFileIsUnknownWithReason) {
    const auto dir = temp_dir("fit-hint");
    library::ModelRecord r;
    r.files = {{dir / "gone.gguf", 0, ""}};
    const auto h = library::fit_hint(r, {});
    EXPECT_EQ(h.verdict, library::FitVerdict::Unknown);
    EXPECT_NE(h.text.find("gone.gguf"), std::string::npos) << h.text;
}

TEST(FitHint, RemoteFileBySizeOnly) {
    library::FitHintOptions o;
    o.local = {device("laptop", 16 * GiB)};
    EXPECT_EQ(library::fit_hint_for_download(4 * GiB, o).verdict, library::FitVerdict::Likely);
    EXPECT_EQ(library::fit_hint_for_download(14 * GiB, o).verdict, library::FitVerdict::Tight);
    const auto no = library::fit_hint_for_download(20 * GiB, o);
    EXPECT_EQ(no.verdict, library::FitVerdict::TooBig);
    EXPECT_NE(no.text.find("weights alone"), std::string::npos) << no.text;
    // A cluster's memory adds up; without one there is no cluster verdict.
    o.cluster = {device("A", 16 * GiB), device("B", 16 * GiB)};
    EXPECT_EQ(library::fit_hint_for_download(20 * GiB, o, true).verdict,
              library::FitVerdict::Likely);
    o.cluster.clear();
    EXPECT_EQ(library::fit_hint_for_download(20 * GiB, o, true).verdict,
              library::FitVerdict::Unknown);
    // Default: this machine's available memory.
    EXPECT_EQ(library::fit_hint_for_download(1ull << 50, {}).verdict, library::FitVerdict::TooBig);
}

}  // namespace
}  // namespace tandem::test
