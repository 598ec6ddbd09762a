// The downloader against the local hub stand-in with injected faults. Every test ends either with
// the file in place and its sha256 equal to the hub's (Python hashlib) LFS oid, or with a
// tandem::Error naming the cause and no file at dest.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "fixtures.h"
#include "tandem/common/error.h"
#include "tandem/library/downloader.h"
#include "tandem/library/hf_client.h"
#include "tandem/library/sha256.h"
#include "test_hub.h"

using namespace tandem::library;
using tandem::test::TestHub;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr const char* kRepo = "org/files";

class DownloaderTest : public ::testing::Test {
  protected:
    void SetUp() override {
        hub_ = std::make_unique<TestHub>(tandem::test::temp_dir("hub"));
        out_ = tandem::test::temp_dir("dl");
    }

    // A file on the hub and the request for it, with size and sha256 from the repo listing.
    DownloadRequest serve(const std::string& name, uint64_t size, uint32_t seed = 7) {
        hub_->make_file(kRepo, name, size, seed);
        HfClient client(hub_->http());
        DownloadRequest req;
        for (const auto& f : client.list_files(kRepo))
            if (f.path == name) {
                req.expected_size = f.size;
                req.expected_sha256 = f.sha256;
            }
        EXPECT_EQ(req.expected_sha256.size(), 64u);
        req.url = client.resolve_url(kRepo, "main", name);
        req.dest = out_ / name;
        return req;
    }

    DownloadOptions fast_options() {
        DownloadOptions o;
        o.http = hub_->http();
        o.connections = 4;
        o.min_segment_bytes = 256 * 1024;
        o.max_attempts = 6;
        o.backoff_initial = 20ms;
        o.backoff_max = 200ms;
        o.stall_timeout = 600ms;
        o.progress_interval = 20ms;
        o.reserve_bytes = 0;
        return o;
    }

    static bool bytes_equal(const fs::path& a, const fs::path& b) {
        std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
        return std::equal(std::istreambuf_iterator<char>(fa), std::istreambuf_iterator<char>(),
                          std::istreambuf_iterator<char>(fb), std::istreambuf_iterator<char>());
    }

    void expect_nothing_at(const fs::path& dest) { EXPECT_FALSE(fs::exists(dest)) << dest; }

    std::string error_of(const DownloadRequest& req, const DownloadOptions& o) {
        try {
            download_file(req, o);
        } catch (const tandem::Error& e) {
            return e.what();
        }
        ADD_FAILURE() << "download of " << req.dest << " did not fail";
        return "";
    }

    std::unique_ptr<TestHub> hub_;
    fs::path out_;
};

TEST_F(DownloaderTest, ParallelSegmentsProduceTheHubsBytes) {
    auto req = serve("model.gguf", 3 * 1024 * 1024 + 123);
    std::vector<DownloadProgress> seen;
    auto r =
        download_file(req, fast_options(), [&](const DownloadProgress& p) { seen.push_back(p); });
    EXPECT_EQ(r.sha256, req.expected_sha256);
    EXPECT_EQ(r.size, *req.expected_size);
    EXPECT_TRUE(bytes_equal(req.dest, hub_->root() / kRepo / "model.gguf"));
    EXPECT_FALSE(fs::exists(part_path(req.dest)));
    EXPECT_FALSE(fs::exists(state_path(req.dest)));
    EXPECT_EQ(r.bytes_transferred, *req.expected_size);
    EXPECT_EQ(r.bytes_resumed, 0u);
    // At least one ranged request per segment, besides the 1-byte probe.
    auto stats = nlohmann::json::parse(hub_->control("stats"))["stats"];
    int ranged = 0;
    for (const auto& q : stats["requests"])
        if (q["path"].get<std::string>().rfind("/cdn/", 0) == 0 && q["range"] != "bytes=0-0")
            ++ranged;
    EXPECT_GE(ranged, 4);  // more when a finished connection took over another's tail
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.back().total, *req.expected_size);
    EXPECT_TRUE(seen.back().verifying);
    for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].done, seen[i - 1].done);
}

TEST_F(DownloaderTest, EmptyFileIsFine) {
    hub_->make_file(kRepo, "empty.txt", 0, 1);
    DownloadRequest req;
    req.url = HfClient(hub_->http()).resolve_url(kRepo, "main", "empty.txt");
    req.dest = out_ / "empty.txt";
    auto r = download_file(req, fast_options());
    EXPECT_EQ(r.size, 0u);
    EXPECT_EQ(r.sha256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_TRUE(fs::exists(req.dest));
}

TEST_F(DownloaderTest, ProgressReportsRateAndEta) {
    const double rate = 1024 * 1024;  // bytes/s, held by the server
    auto req = serve("slow.gguf", 1200 * 1024);
    hub_->fault("kind=throttle&rate=1048576&times=-1&match=slow.gguf");
    auto o = fast_options();
    o.connections = 1;
    o.progress_interval = 50ms;
    std::vector<DownloadProgress> mid;
    download_file(req, o, [&](const DownloadProgress& p) {
        if (!p.verifying && p.done > p.total / 3 && p.done < p.total * 9 / 10) mid.push_back(p);
    });
    ASSERT_GE(mid.size(), 3u);
    for (const auto& p : mid) {
        EXPECT_GT(p.bytes_per_second, rate / 2) << p.done;
        EXPECT_LT(p.bytes_per_second, rate * 2) << p.done;
        double eta = double(p.total - p.done) / rate;
        EXPECT_GT(p.eta_seconds, eta / 2) << p.done;
        EXPECT_LT(p.eta_seconds, eta * 2 + 0.1) << p.done;
        EXPECT_EQ(p.active_connections, 1);
    }
}

TEST_F(DownloaderTest, IdleConnectionsTakeOverASlowSegment) {
    const uint64_t size = 4 * 1024 * 1024;
    auto req = serve("uneven.gguf", size);
    // One of the four segment requests crawls at 256 KiB/s: alone it would need 4 s.
    hub_->fault("kind=throttle&rate=262144&times=1&match=uneven.gguf");
    auto t0 = std::chrono::steady_clock::now();
    auto r = download_file(req, fast_options());
    auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(r.sha256, req.expected_sha256);
    EXPECT_EQ(r.bytes_transferred, size);  // taken-over tails are not written twice
    EXPECT_LT(took, 2500ms);
    auto stats = nlohmann::json::parse(hub_->control("stats"))["stats"];
    int ranged = 0;
    for (const auto& q : stats["requests"])
        if (q["path"].get<std::string>().rfind("/cdn/", 0) == 0 && q["range"] != "bytes=0-0")
            ++ranged;
    EXPECT_GT(ranged, 4);
}

TEST_F(DownloaderTest, ConnectionCutMidSegmentIsResumedFromTheCut) {
    auto req = serve("cut.gguf", 2 * 1024 * 1024);
    hub_->fault("kind=cut&after=100000&times=3&match=cut.gguf");
    auto r = download_file(req, fast_options());
    EXPECT_EQ(r.sha256, req.expected_sha256);
    EXPECT_GE(r.retries, 2);
    // Each byte came once: retries asked only for what was missing.
    EXPECT_EQ(r.bytes_transferred, *req.expected_size);
}

TEST_F(DownloaderTest, ServerRestartMidDownloadIsSurvived) {
    auto req = serve("restart.gguf", 4 * 1024 * 1024);
    hub_->fault("kind=stall&after=300000&seconds=30&times=4&match=restart.gguf");
    auto o = fast_options();
    o.stall_timeout = 5s;  // the kill, not the stall detector, ends these transfers
    o.max_attempts = 30;
    std::atomic<uint64_t> done{0};
    std::optional<DownloadResult> result;
    std::string error;
    std::thread t([&] {
        try {
            result = download_file(req, o, [&](const DownloadProgress& p) { done = p.done; });
        } catch (const std::exception& e) {
            error = e.what();
        }
    });
    auto until = std::chrono::steady_clock::now() + 10s;
    while (done < 4 * 300000 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(10ms);
    EXPECT_GE(done.load(), 4u * 300000u);
    hub_->kill();
    std::this_thread::sleep_for(300ms);
    hub_->restart();
    t.join();
    ASSERT_TRUE(result) << error;
    EXPECT_EQ(result->sha256, req.expected_sha256);
    EXPECT_GE(result->retries, 1);
    EXPECT_EQ(result->bytes_transferred, *req.expected_size);
}

TEST_F(DownloaderTest, WrongContentFailsTheHashAndLeavesNothing) {
    auto req = serve("bad.gguf", 1024 * 1024);
    hub_->fault("kind=corrupt&times=-1&match=bad.gguf");
    auto msg = error_of(req, fast_options());
    EXPECT_NE(msg.find("sha256 mismatch"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bad.gguf"), std::string::npos) << msg;
    expect_nothing_at(req.dest);
    EXPECT_FALSE(fs::exists(part_path(req.dest)));
    EXPECT_FALSE(fs::exists(state_path(req.dest)));

    // Right bytes, wrong expectation: same outcome.
    hub_->reset();
    req.expected_sha256 = std::string(64, '0');
    msg = error_of(req, fast_options());
    EXPECT_NE(msg.find("sha256 mismatch"), std::string::npos) << msg;
    expect_nothing_at(req.dest);
}

TEST_F(DownloaderTest, NotFoundFailsAtOnceNamingTheStatus) {
    auto req = serve("there.gguf", 10000);
    req.url = HfClient(hub_->http()).resolve_url(kRepo, "main", "absent.gguf");
    req.dest = out_ / "absent.gguf";
    hub_->reset();
    auto msg = error_of(req, fast_options());
    EXPECT_NE(msg.find("HTTP 404"), std::string::npos) << msg;
    EXPECT_NE(msg.find("absent.gguf"), std::string::npos) << msg;
    expect_nothing_at(req.dest);
    // Asked once: a 404 is not retried.
    auto stats = nlohmann::json::parse(hub_->control("stats"))["stats"];
    int asked = 0;
    for (const auto& q : stats["requests"])
        if (q["path"].get<std::string>().find("absent.gguf") != std::string::npos) ++asked;
    EXPECT_EQ(asked, 1);
}

TEST_F(DownloaderTest, RateLimitHonoursRetryAfterThenCompletes) {
    auto req = serve("busy.gguf", 1024 * 1024);
    hub_->fault("kind=status&status=429&retry_after=0.3&times=3&match=busy.gguf");
    auto t0 = std::chrono::steady_clock::now();
    auto r = download_file(req, fast_options());
    EXPECT_EQ(r.sha256, req.expected_sha256);
    EXPECT_GE(r.retries, 3);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);  // waited as told
}

TEST_F(DownloaderTest, ServerErrorsAreRetriedAndPersistentOnesReported) {
    auto req = serve("flaky.gguf", 1024 * 1024);
    hub_->fault("kind=status&status=500&times=4&match=flaky.gguf");
    auto r = download_file(req, fast_options());
    EXPECT_EQ(r.sha256, req.expected_sha256);
    EXPECT_GE(r.retries, 4);

    auto req2 = serve("broken.gguf", 1024 * 1024, 9);
    hub_->fault("kind=status&status=500&times=-1&probe=1&match=broken.gguf");
    auto msg = error_of(req2, fast_options());
    EXPECT_NE(msg.find("HTTP 500"), std::string::npos) << msg;
    EXPECT_NE(msg.find("broken.gguf"), std::string::npos) << msg;
    expect_nothing_at(req2.dest);
}

TEST_F(DownloaderTest, StalledTransferIsDetectedAndRetried) {
    auto req = serve("stall.gguf", 1024 * 1024);
    hub_->fault("kind=stall&after=50000&seconds=20&times=2&match=stall.gguf");
    auto t0 = std::chrono::steady_clock::now();
    auto r = download_file(req, fast_options());
    EXPECT_EQ(r.sha256, req.expected_sha256);
    EXPECT_GE(r.retries, 2);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 8s);  // not the server's 20 s
}

TEST_F(DownloaderTest, CancelKeepsStateAndARestartResumesOnlyTheRest) {
    const uint64_t size = 8 * 1024 * 1024, head = 1024 * 1024;
    auto req = serve("resume.gguf", size);
    hub_->fault("kind=stall&after=1048576&seconds=30&times=4&match=resume.gguf");
    auto control = std::make_shared<DownloadControl>();
    auto o = fast_options();
    o.stall_timeout = 10s;
    EXPECT_THROW(download_file(
                     req, o,
                     [&](const DownloadProgress& p) {
                         if (p.done >= 4 * head) control->cancel();
                     },
                     control),
                 DownloadCancelled);
    expect_nothing_at(req.dest);
    ASSERT_TRUE(fs::exists(part_path(req.dest)));
    auto state = nlohmann::json::parse(std::ifstream(state_path(req.dest)));
    uint64_t saved = 0;
    for (const auto& s : state["segments"]) saved += s["done"].get<uint64_t>();
    EXPECT_EQ(saved, 4 * head);

    hub_->reset();  // a new process, as after a restart of the app
    auto r = download_file(req, fast_options());
    EXPECT_EQ(r.sha256, req.expected_sha256);
    EXPECT_EQ(r.bytes_resumed, 4 * head);
    EXPECT_EQ(r.bytes_transferred, size - 4 * head);
    // The resumed 4 MiB were not asked for again (a connection taking over another's tail may
    // leave some bytes in flight, hence not an exact count).
    EXPECT_GE(hub_->bytes_served(), size - 4 * head + 1);  // + the probe's byte
    EXPECT_LT(hub_->bytes_served(), size);
}

TEST_F(DownloaderTest, ChangedRemoteFileRestartsCleanly) {
    const uint64_t size = 4 * 1024 * 1024;
    auto req = serve("changing.gguf", size, 1);
    hub_->fault("kind=stall&after=262144&seconds=30&times=4&match=changing.gguf");
    auto control = std::make_shared<DownloadControl>();
    auto o = fast_options();
    o.stall_timeout = 10s;
    EXPECT_THROW(download_file(
                     req, o,
                     [&](const DownloadProgress& p) {
                         if (p.done >= 4 * 262144) control->cancel();
                     },
                     control),
                 DownloadCancelled);
    hub_->reset();
    auto req2 = serve("changing.gguf", size, 2);  // same name, new content upstream
    ASSERT_NE(req2.expected_sha256, req.expected_sha256);
    auto r = download_file(req2, fast_options());
    EXPECT_EQ(r.sha256, req2.expected_sha256);
    EXPECT_EQ(r.bytes_resumed, 0u);
    EXPECT_TRUE(bytes_equal(req2.dest, hub_->root() / kRepo / "changing.gguf"));
}

TEST_F(DownloaderTest, PauseHoldsTheTransferUntilResume) {
    auto req = serve("pause.gguf", 4 * 1024 * 1024);
    // Slow segments, so the pause lands mid-transfer.
    hub_->fault("kind=stall&after=262144&seconds=30&times=4&match=pause.gguf");
    auto control = std::make_shared<DownloadControl>();
    std::atomic<bool> paused_once{false};
    std::atomic<uint64_t> served_early{0}, served_late{0};
    auto o = fast_options();
    o.stall_timeout = 10s;
    std::thread resumer;
    auto r = download_file(
        req, o,
        [&](const DownloadProgress& p) {
            if (!paused_once && p.done >= 4 * 262144) {
                paused_once = true;
                control->pause();
                resumer = std::thread([&] {
                    std::this_thread::sleep_for(150ms);
                    served_early = hub_->bytes_served();
                    std::this_thread::sleep_for(300ms);
                    served_late = hub_->bytes_served();
                    control->resume();
                });
            }
        },
        control);
    resumer.join();
    EXPECT_TRUE(paused_once);
    EXPECT_EQ(served_early.load(), served_late.load());  // nothing flowed while paused
    EXPECT_EQ(r.sha256, req.expected_sha256);
    EXPECT_EQ(r.bytes_transferred, *req.expected_size);
}

TEST_F(DownloaderTest, NotEnoughFreeSpaceIsRefusedBeforeStarting) {
    auto req = serve("big.gguf", 2 * 1024 * 1024);
    auto o = fast_options();
    o.free_space = [](const fs::path&) -> uint64_t { return 1024 * 1024; };
    auto msg = error_of(req, o);
    EXPECT_NE(msg.find("not enough disk space"), std::string::npos) << msg;
    expect_nothing_at(req.dest);
    EXPECT_EQ(hub_->bytes_served(), 1u);  // only the probe
}

// A real full disk: a 1 MiB tmpfs (we run as root in CI; when mounting is not allowed, a 1 MiB
// RLIMIT_FSIZE makes writes fail the same way and the test says so).
TEST_F(DownloaderTest, FullDiskFailsClearlyAndRegistersNothing) {
    auto req = serve("full.gguf", 3 * 1024 * 1024);
    auto mnt = tandem::test::temp_dir("tmpfs");
    bool mounted = ::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") == 0;
    req.dest = mnt / "full.gguf";
    auto o = fast_options();
    // Lie about free space so the transfer starts and meets the real limit.
    o.free_space = [](const fs::path&) -> uint64_t { return uint64_t(1) << 40; };
    std::string msg;
    if (mounted) {
        msg = error_of(req, o);
        EXPECT_NE(msg.find("disk full"), std::string::npos) << msg;
        expect_nothing_at(req.dest);
        // And the honest check refuses up front.
        auto o2 = fast_options();
        msg = error_of(req, o2);
        EXPECT_NE(msg.find("not enough disk space"), std::string::npos) << msg;
        ::umount2(mnt.c_str(), MNT_DETACH);
    } else {
        std::printf("[ note ] tmpfs mount not permitted; using RLIMIT_FSIZE=1MiB instead\n");
        auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit old{};
        getrlimit(RLIMIT_FSIZE, &old);
        rlimit small{1024 * 1024, old.rlim_max};
        setrlimit(RLIMIT_FSIZE, &small);
        msg = error_of(req, o);
        setrlimit(RLIMIT_FSIZE, &old);
        std::signal(SIGXFSZ, old_handler);
        EXPECT_NE(msg.find("full.gguf"), std::string::npos) << msg;
        EXPECT_NE(msg.find("file size limit"), std::string::npos) << msg;
        expect_nothing_at(req.dest);
        EXPECT_FALSE(fs::exists(part_path(req.dest)));
    }
}

}  // namespace
