// Tokenizing 1 MB of text takes well under a second (merge loops are priority queues over
// adjacent pairs, not rescans). Measured as this thread's CPU time, so a busy machine does not
// make the test flaky; the limit is 1 s, the expected time about a tenth of that.
#include <gtest/gtest.h>

#include <ctime>

#include "fixture_tokenizers.h"
#include "fixtures.h"
#include "vector_files.h"

namespace {

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

class OneMegabyte : public testing::TestWithParam<std::string> {};

TEST_P(OneMegabyte, EncodesInUnderOneSecond) {
    const auto tok = tandem::test::load_fixture_tokenizer(GetParam());
    TANDEM_FIXTURE_OR_SKIP(inp, "tokenizer/gguf-vocab/ggml-vocab-gpt-2.gguf.inp");
    if (!tok) GTEST_SKIP() << "fixture not found: " << GetParam();
    // The vector strings (many scripts, emoji, runs of spaces and newlines), 1 MiB of them.
    const std::string unit = tandem::test::read_file(inp);
    std::string text;
    while (text.size() + unit.size() <= (1u << 20)) text += unit;

    const double t0 = thread_cpu_seconds();
    const auto ids = tok->encode(text, false, false);
    const double t1 = thread_cpu_seconds();
    const std::string back = tok->decode(ids);
    const double t2 = thread_cpu_seconds();
    std::printf("[ %s ] %zu bytes -> %zu ids: encode %.3f s, decode %.3f s (CPU)\n",
                GetParam().c_str(), text.size(), ids.size(), t1 - t0, t2 - t1);
    EXPECT_LT(t1 - t0, 1.0);
    EXPECT_LT(t2 - t1, 1.0);
    EXPECT_EQ(back, text);
    EXPECT_GT(ids.size(), text.size() / 8);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OneMegabyte, testing::Values("gpt-2", "hf-llama3", "llama-spm"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n)
                                 if (c == '-') c = '_';
                             return n;
                         });

}  // namespace
