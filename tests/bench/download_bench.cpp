// Loopback download throughput: tandem's downloader (1/4/8 connections, sha256 verification
// included) against `curl -L -o` (and curl followed by `sha256sum`) on the same file from the
// same local server. usage: bench-download [size_mib=1024] [repeats=2]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fixtures.h"
#include "tandem/library/downloader.h"
#include "tandem/library/hf_client.h"
#include "test_hub.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

double run_shell(const std::string& cmd) {
    auto t0 = Clock::now();
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "failed: %s\n", cmd.c_str());
    return seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
    using namespace tandem::library;
    const uint64_t mib = argc > 1 ? std::stoull(argv[1]) : 1024;
    const int repeats = argc > 2 ? std::stoi(argv[2]) : 2;
    const uint64_t size = mib << 20;
    auto dir = tandem::test::temp_dir("bench-dl");
    tandem::test::TestHub hub(dir / "hub");
    hub.make_file("org/bench", "model.gguf", size, 42);
    HfClient client(hub.http());
    auto files = client.list_files("org/bench");
    DownloadRequest req;
    req.url = client.resolve_url("org/bench", "main", "model.gguf");
    req.dest = dir / "out" / "model.gguf";
    req.expected_size = files.at(0).size;
    req.expected_sha256 = files.at(0).sha256;
    fs::create_directories(req.dest.parent_path());

    std::printf("file: %llu MiB over loopback (python http.server with sendfile), best of %d\n",
                static_cast<unsigned long long>(mib), repeats);
    std::printf("%-44s %8s %8s %14s\n", "client", "seconds", "MiB/s", "transfer MiB/s");
    auto report = [&](const std::string& name, double best, double transfer = 0) {
        std::printf("%-44s %8.2f %8.0f", name.c_str(), best, double(mib) / best);
        if (transfer > 0) std::printf(" %14.0f", double(mib) / transfer);
        std::printf("\n");
        std::fflush(stdout);
    };
    auto out = req.dest.string();
    double best = 1e9;
    for (int i = 0; i < repeats; ++i) {
        fs::remove(req.dest);
        best = std::min(best, run_shell("curl -s -L -o '" + out + "' '" + req.url + "'"));
    }
    report("curl -L -o", best);
    best = 1e9;
    for (int i = 0; i < repeats; ++i) {
        fs::remove(req.dest);
        best = std::min(best, run_shell("curl -s -L -o '" + out + "' '" + req.url +
                                        "' && sha256sum '" + out + "' > /dev/null"));
    }
    report("curl -L -o && sha256sum", best);
    for (int conns : {1, 4, 8}) {
        best = 1e9;
        double best_transfer = 1e9;
        for (int i = 0; i < repeats; ++i) {
            fs::remove(req.dest);
            DownloadOptions o;
            o.http = hub.http();
            o.connections = conns;
            o.reserve_bytes = 0;
            auto t0 = Clock::now();
            double transfer = 0;
            download_file(req, o, [&](const DownloadProgress& p) {
                if (p.verifying && transfer == 0) transfer = seconds_since(t0);
            });
            best = std::min(best, seconds_since(t0));
            best_transfer = std::min(best_transfer, transfer);
        }
        report("tandem, " + std::to_string(conns) + " conn (transfer+fsync+sha256)", best,
               best_transfer);
    }
    return 0;
}
