// pull_model end to end against the hub stand-in serving GGUF files written by the gguf package:
// a model is registered only after every file arrived and verified; faults leave the catalog
// untouched.
#include <gtest/gtest.h>

#include <fstream>

#include "fixtures.h"
#include "gguf_maker.h"
#include "tandem/common/error.h"
#include "tandem/library/pull.h"
#include "test_hub.h"

using namespace tandem::library;
using tandem::test::TestHub;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

class PullTest : public ::testing::Test {
  protected:
    void SetUp() override {
        root_ = tandem::test::temp_dir("pullhub");
        home_ = tandem::test::temp_dir("pullhome");
    }
    void start_hub() { hub_ = std::make_unique<TestHub>(root_); }

    PullOptions options() {
        PullOptions o;
        o.models_dir = home_ / "models";
        o.download.http = hub_->http();
        o.download.backoff_initial = 20ms;
        o.download.backoff_max = 100ms;
        o.download.max_attempts = 4;
        o.download.reserve_bytes = 0;
        o.download.min_segment_bytes = 8192;
        return o;
    }

    std::string error_of(const std::string& spec, Catalog& cat, const PullOptions& o) {
        try {
            pull_model(ModelSpec::parse(spec), cat, o);
        } catch (const tandem::Error& e) {
            return e.what();
        }
        ADD_FAILURE() << "pull " << spec << " did not fail";
        return "";
    }

    fs::path root_, home_;
    std::unique_ptr<TestHub> hub_;
};

TEST_F(PullTest, SplitModelIsDownloadedVerifiedAndRegistered) {
    TANDEM_GGUF_OR_SKIP(split, root_ / "org/Tiny-GGUF/Tiny-Q4_K_M.gguf",
                        "--name Tiny --split-tensors 3 --file-type 15");
    TANDEM_GGUF_OR_SKIP(single, root_ / "org/Tiny-GGUF/Tiny-Q8_0.gguf", "--name Tiny");
    ASSERT_EQ(single.parts.size(), 1u);  // another quant in the repo, not to be fetched
    start_hub();
    Catalog cat(home_ / "library.db");
    std::set<size_t> files_seen;
    auto r = pull_model(ModelSpec::parse("org/Tiny-GGUF:Q4_K_M"), cat, options(),
                        [&](const PullEvent& e) {
                            EXPECT_EQ(e.file_count, 3u);
                            files_seen.insert(e.file_index);
                        });
    EXPECT_FALSE(r.already_present);
    EXPECT_EQ(r.bytes_transferred, split.total_size);
    EXPECT_EQ(files_seen.size(), 3u);
    ASSERT_EQ(r.record.files.size(), 3u);
    EXPECT_EQ(r.record.parameters, split.parameters);
    EXPECT_EQ(r.record.source_repo, "org/Tiny-GGUF");
    EXPECT_TRUE(r.record.managed);
    for (const auto& f : r.record.files) EXPECT_EQ(f.sha256.size(), 64u);
    EXPECT_EQ(r.record.files[0].path,
              home_ / "models/org/Tiny-GGUF/Tiny-Q4_K_M-00001-of-00003.gguf");
    auto found = cat.find("org/Tiny-GGUF:q4_k_m");
    ASSERT_TRUE(found);
    EXPECT_EQ(found->id, r.record.id);

    hub_->reset();
    auto again = pull_model(ModelSpec::parse("org/Tiny-GGUF:Q4_K_M"), cat, options());
    EXPECT_TRUE(again.already_present);
    EXPECT_EQ(again.bytes_transferred, 0u);
    EXPECT_EQ(hub_->bytes_served(), 0u);
    EXPECT_EQ(cat.list().size(), 1u);
}

TEST_F(PullTest, BadPartRegistersNothingAndARetryFetchesOnlyWhatIsMissing) {
    TANDEM_GGUF_OR_SKIP(split, root_ / "org/Tiny-GGUF/Tiny-Q4_K_M.gguf",
                        "--split-tensors 3 --file-type 15");
    start_hub();
    Catalog cat(home_ / "library.db");
    hub_->fault("kind=corrupt&times=-1&match=00002-of-00003");
    auto msg = error_of("org/Tiny-GGUF:Q4_K_M", cat, options());
    EXPECT_NE(msg.find("sha256 mismatch"), std::string::npos) << msg;
    EXPECT_TRUE(cat.list().empty());
    auto dir = home_ / "models/org/Tiny-GGUF";
    EXPECT_FALSE(fs::exists(dir / "Tiny-Q4_K_M-00002-of-00003.gguf"));
    EXPECT_FALSE(fs::exists(dir / "Tiny-Q4_K_M-00002-of-00003.gguf.part"));

    hub_->reset();
    auto r = pull_model(ModelSpec::parse("org/Tiny-GGUF:Q4_K_M"), cat, options());
    EXPECT_EQ(r.record.parameters, split.parameters);
    EXPECT_EQ(r.bytes_transferred, split.total_size - fs::file_size(split.parts[0]));
    EXPECT_EQ(cat.list().size(), 1u);
}

TEST_F(PullTest, MissingFileAndFullDiskFailBeforeRegistering) {
    TANDEM_GGUF_OR_SKIP(single, root_ / "org/Tiny-GGUF/Tiny-Q8_0.gguf", "");
    ASSERT_EQ(single.parts.size(), 1u);
    start_hub();
    Catalog cat(home_ / "library.db");
    hub_->fault("kind=status&status=404&times=-1&probe=1&match=Q8_0");
    auto msg = error_of("org/Tiny-GGUF:Q8_0", cat, options());
    EXPECT_NE(msg.find("404"), std::string::npos) << msg;
    EXPECT_TRUE(cat.list().empty());

    hub_->reset();
    auto o = options();
    o.download.free_space = [](const fs::path&) -> uint64_t { return 1000; };
    msg = error_of("org/Tiny-GGUF:Q8_0", cat, o);
    EXPECT_NE(msg.find("not enough disk space"), std::string::npos) << msg;
    EXPECT_EQ(hub_->bytes_served(), 0u);
    EXPECT_TRUE(cat.list().empty());

    msg = error_of("org/Tiny-GGUF:Q2_K", cat, options());
    EXPECT_NE(msg.find("available: Q8_0"), std::string::npos) << msg;
}

TEST_F(PullTest, AFileThatIsNotAModelIsNotRegistered) {
    start_hub();
    hub_->make_file("org/Junk-GGUF", "Junk-Q4_0.gguf", 50000, 3);
    Catalog cat(home_ / "library.db");
    auto msg = error_of("org/Junk-GGUF", cat, options());
    EXPECT_NE(msg.find("not a usable model"), std::string::npos) << msg;
    EXPECT_TRUE(cat.list().empty());
}

}  // namespace
