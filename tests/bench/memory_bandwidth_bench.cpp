// STREAM-like memory bandwidth of this machine: the ceiling for decode, which reads every weight
// once per token. Three kernels over arrays far larger than the last-level cache:
//   read   sum of a buffer (what a matvec does with the weights)          bytes = N
//   copy   b = a                                                          bytes = 2N (+ RFO)
//   triad  a = b + s * c                                                  bytes = 3N (+ RFO)
// Each runs with 1..T threads (contiguous slices per thread), best of R repetitions.
//   bench-memory-bandwidth [--mib N] [--reps R] [--threads T]
// Counted bytes follow STREAM (no write-allocate traffic), so copy/triad read low next to read.
// Two clocks: wall time, and the slowest thread's CPU time. On a shared, loaded machine the
// threads are descheduled most of the time and the wall figure measures the scheduler; the CPU
// time figure is the bandwidth while running (what a decode step gets while it runs).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

struct Options {
    size_t mib = 1024;  // per array; must dwarf the L3 (260 MiB on the dev VM)
    int reps = 5;
    int threads = 0;  // 0: hardware_concurrency
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> long {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", a.c_str());
                std::exit(2);
            }
            char* end = nullptr;
            const long v = std::strtol(argv[++i], &end, 10);
            if (!end || *end || v <= 0) {
                std::fprintf(stderr, "%s: '%s' is not a positive number\n", a.c_str(), argv[i]);
                std::exit(2);
            }
            return v;
        };
        if (a == "--mib")
            o.mib = static_cast<size_t>(value());
        else if (a == "--reps")
            o.reps = static_cast<int>(value());
        else if (a == "--threads")
            o.threads = static_cast<int>(value());
        else {
            std::fprintf(stderr, "usage: %s [--mib N] [--reps R] [--threads T]\n", argv[0]);
            std::exit(2);
        }
    }
    if (o.threads <= 0)
        o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return o;
}

// Read kernel: 64-bit integer adds over the buffer, four independent accumulators so the loop is
// bound by loads, not by add latency. The result is returned so the loop cannot be removed.
#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t read_sum(const uint8_t* p, size_t n) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
    }
    const __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#else
uint64_t read_sum(const uint8_t* p, size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v;
        std::memcpy(&v, p + i, 8);
        s += v;
    }
    return s;
}
#endif

void triad(float* a, const float* b, const float* c, size_t n, float s) {
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

double thread_cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

struct Times {
    double wall, cpu;  // cpu: the slowest thread's CPU time
};

// Runs fn(begin, end) on `threads` threads over [0, n) (in 4 KiB-aligned slices).
template <typename Fn>
Times timed(int threads, size_t n, Fn fn) {
    const size_t per = (n / threads + 4095) / 4096 * 4096;
    std::vector<double> cpu(static_cast<size_t>(threads));
    auto slice = [&](int t) {
        const double c0 = thread_cpu_s();
        fn(std::min(n, per * t), std::min(n, per * (t + 1)));
        cpu[static_cast<size_t>(t)] = thread_cpu_s() - c0;
    };
    std::vector<std::thread> pool;
    const double t0 = now_s();
    for (int t = 1; t < threads; ++t) pool.emplace_back(slice, t);
    slice(0);
    for (auto& th : pool) th.join();
    return {now_s() - t0, *std::max_element(cpu.begin(), cpu.end())};
}

struct Best {
    double wall = 1e30, cpu = 1e30;
    void add(Times t) {
        wall = std::min(wall, t.wall);
        cpu = std::min(cpu, t.cpu);
    }
};

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    const size_t bytes = o.mib << 20;
    auto alloc = [&]() {
        auto* p = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
        if (!p) {
            std::fprintf(stderr, "cannot allocate %zu MiB\n", o.mib);
            std::exit(1);
        }
        // Touch every page (and give the floats finite values) before timing.
        auto* f = reinterpret_cast<float*>(p);
        for (size_t i = 0; i < bytes / 4; ++i) f[i] = static_cast<float>(i & 1023);
        return p;
    };
    uint8_t* a = alloc();
    uint8_t* b = alloc();
    uint8_t* c = alloc();
    const size_t nf = bytes / 4;

    std::printf("memory bandwidth: %zu MiB per array, best of %d, GB = 1e9 bytes\n", o.mib, o.reps);
    std::printf("load average: %s", [] {
        static char buf[64] = "?\n";
        if (FILE* f = std::fopen("/proc/loadavg", "r")) {
            if (!std::fgets(buf, sizeof buf, f)) std::snprintf(buf, sizeof buf, "?\n");
            std::fclose(f);
        }
        return buf;
    }());
    std::printf("%-8s %11s %11s %11s   %11s %11s %11s\n", "threads", "read wall", "copy wall",
                "triad wall", "read cpu", "copy cpu", "triad cpu");
    volatile uint64_t sink = 0;
    for (int th = 1; th <= o.threads; ++th) {
        Best rd, cp, tr;
        for (int r = 0; r < o.reps; ++r) {
            std::vector<uint64_t> sums(static_cast<size_t>(th) + 1);
            rd.add(timed(th, bytes, [&](size_t lo, size_t hi) {
                sums[lo * th / bytes] += read_sum(a + lo, hi - lo);
            }));
            for (auto s : sums) sink = sink + s;
            cp.add(timed(th, bytes,
                         [&](size_t lo, size_t hi) { std::memcpy(b + lo, a + lo, hi - lo); }));
            tr.add(timed(th, nf, [&](size_t lo, size_t hi) {
                triad(reinterpret_cast<float*>(c) + lo, reinterpret_cast<const float*>(a) + lo,
                      reinterpret_cast<const float*>(b) + lo, hi - lo, 0.5f);
            }));
        }
        const double gb = double(bytes) / 1e9;
        std::printf("%-8d %11.1f %11.1f %11.1f   %11.1f %11.1f %11.1f   (GB/s)\n", th, gb / rd.wall,
                    2 * gb / cp.wall, 3 * gb / tr.wall, gb / rd.cpu, 2 * gb / cp.cpu,
                    3 * gb / tr.cpu);
    }
    std::free(a);
    std::free(b);
    std::free(c);
    return sink == 42 ? 3 : 0;  // never 42 in practice; keeps the reads observable
}
