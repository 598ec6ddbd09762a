// bench-quantize-model: speed (input MB/s) and peak memory (max RSS) of the model quantizer on a
// random-weight model in real shapes (default: Llama 3.2 1B in F16, 2.5 GB), one child process
// per file type so each peak RSS is its own. With --llama-quantize PATH, llama.cpp's tool runs
// on the same input in the same run, and the ratios are printed.
//
//   bench-quantize-model [--like llama-3.2-1b] [--in-type f16] [--threads N] [--dir DIR]
//                  [--types q8_0,q4_0,...] [--llama-quantize PATH]
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tandem/common/error.h"
#include "tandem/engine/synth.h"
#include "tandem/hf/quantize.h"

namespace {

struct Run {
    double seconds = 0;
    long max_rss_kib = 0;
    int status = 0;
};

// Runs `child` in a forked process; its wall time and peak RSS.
template <typename F>
Run measure(F&& child) {
    std::fflush(nullptr);  // or the child would print the parent's buffered lines again
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        int rc = 0;
        try {
            rc = child();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "error: %s\n", e.what());
            rc = 1;
        }
        std::fflush(nullptr);
        _exit(rc);
    }
    Run r;
    struct rusage ru {};
    wait4(pid, &r.status, 0, &ru);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.max_rss_kib = ru.ru_maxrss;
    return r;
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    size_t a = 0;
    while (a <= s.size()) {
        size_t b = s.find(',', a);
        if (b == std::string::npos) b = s.size();
        if (b > a) out.push_back(s.substr(a, b - a));
        a = b + 1;
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::string like = "llama-3.2-1b", in_type = "f16", types = "q8_0,q4_0,q4_k_m,q5_k_m,q6_k";
    std::string dir = "/tmp/tandem-bench-quantize", llama;
    int threads = int(std::max(1u, std::thread::hardware_concurrency()));
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i], v = argv[i + 1];
        if (k == "--like")
            like = v;
        else if (k == "--in-type")
            in_type = v;
        else if (k == "--threads")
            threads = std::atoi(v.c_str());
        else if (k == "--dir")
            dir = v;
        else if (k == "--types")
            types = v;
        else if (k == "--llama-quantize")
            llama = v;
        else {
            std::fprintf(stderr, "unknown option %s\n", k.c_str());
            return 2;
        }
    }
    try {
        std::filesystem::create_directories(dir);
        const auto input = std::filesystem::path(dir) / (like + "." + in_type + ".gguf");
        if (!std::filesystem::exists(input)) {
            std::printf("writing %s ...\n", input.c_str());
            const auto t = tandem::dtype_from_name(in_type);
            if (!t) throw tandem::Error("unknown --in-type " + in_type);
            tandem::engine::write_synthetic_model(like, *t, input);
        }
        const double in_mb = double(std::filesystem::file_size(input)) / 1e6;
        std::printf("input %s: %.0f MB, %d threads, CPU threads available %u\n", input.c_str(),
                    in_mb, threads, std::thread::hardware_concurrency());
        std::printf("| type | tool | seconds | input MB/s | output MB | peak RSS MiB |\n");
        std::printf("|---|---|---|---|---|---|\n");
        for (const auto& name : split(types)) {
            const auto scheme = tandem::hf::quant_scheme_from_name(name);
            if (!scheme) throw tandem::Error("unknown type " + name);
            const auto out = std::filesystem::path(dir) / ("out." + name + ".gguf");
            const Run ours = measure([&] {
                tandem::hf::QuantizeOptions o;
                o.scheme = *scheme;
                o.threads = threads;
                tandem::hf::quantize_gguf(input, out, o);
                return 0;
            });
            if (ours.status != 0) throw tandem::Error("quantize failed for " + name);
            const double out_mb = double(std::filesystem::file_size(out)) / 1e6;
            std::printf("| %s | tandem | %.1f | %.0f | %.0f | %.0f |\n", name.c_str(), ours.seconds,
                        in_mb / ours.seconds, out_mb, ours.max_rss_kib / 1024.0);
            std::fflush(stdout);
            std::filesystem::remove(out);
            if (llama.empty()) continue;
            const std::string upper = std::string(tandem::hf::quant_scheme_name(*scheme));
            const Run ref = measure([&] {
                const std::string t = std::to_string(threads);
                const std::string o = out.string() + ".llama";
                // Its per-tensor log would bury the table.
                const int devnull = open("/dev/null", O_WRONLY);
                dup2(devnull, STDOUT_FILENO);
                dup2(devnull, STDERR_FILENO);
                execl(llama.c_str(), llama.c_str(), input.c_str(), o.c_str(), upper.c_str(),
                      t.c_str(), static_cast<char*>(nullptr));
                return 127;
            });
            if (ref.status != 0) throw tandem::Error("llama-quantize failed for " + name);
            const std::filesystem::path lo = out.string() + ".llama";
            std::printf("| %s | llama-quantize | %.1f | %.0f | %.0f | %.0f |\n", name.c_str(),
                        ref.seconds, in_mb / ref.seconds,
                        double(std::filesystem::file_size(lo)) / 1e6, ref.max_rss_kib / 1024.0);
            std::printf("| %s | ratio tandem/llama | %.2fx speed | | | %.2fx RSS |\n", name.c_str(),
                        ref.seconds / ours.seconds,
                        double(ours.max_rss_kib) / double(std::max(1L, ref.max_rss_kib)));
            std::fflush(stdout);
            std::filesystem::remove(lo);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
