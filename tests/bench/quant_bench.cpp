// Matvec (decode) and small-batch matmul (prefill) throughput of the CPU weight kernels on one
// thread: a 2048-wide input and 8192 output rows, per weight type and kernel level.
//   bench-quant --benchmark_filter='Matvec/q4_k'
// Reports weight GB/s (bytes of the weight matrix per second; activations are tiny and cached).
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "tandem/quant/quant.h"

namespace {

using tandem::DType;
namespace q = tandem::quant;

constexpr int64_t kIn = 2048, kOut = 8192;
// Rows of the cache-resident variant: 2048 x 256 stays in L2, so it measures the kernels' own
// speed rather than memory bandwidth.
constexpr int64_t kOutHot = 256;
// Narrow rows as in small models (Gemma 3 270M: n_embd 640, stored as Q5_0/Q8_0 because 640 is
// not a multiple of 256): per-row overhead shows here.
constexpr int64_t kInNarrow = 640, kOutNarrow = 2048;
// The same 2048 x 8192 matrix the other way round: 2048 rows of 8192 (e.g. an FFN down).
constexpr int64_t kInWide = 8192, kOutWide = 2048;

struct Matrix {
    std::vector<uint8_t> bytes;
    std::vector<float> x;
};

const Matrix& matrix(DType t, int64_t n_tokens, int64_t n_in) {
    static std::vector<std::pair<std::pair<DType, int64_t>, Matrix>> cache;
    const int64_t key_n = n_tokens * 100000 + n_in;
    for (auto& [key, m] : cache)
        if (key.first == t && key.second == key_n) return m;
    Matrix m;
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> row(n_in);
    const size_t rb = tandem::row_bytes(t, n_in);
    m.bytes.resize(rb * kOut);
    // Quantising 8192 rows of K-quants takes seconds; the kernels do not care about the values,
    // so quantise 64 distinct rows and repeat them.
    for (int64_t r = 0; r < kOut; ++r) {
        if (r < 64 && !q::can_quantize(t)) {
            // No quantiser (Q2_K, Q3_K, IQ4_*): random bytes; the kernels' speed does not depend on
            // them.
            for (size_t b = 0; b < rb; ++b) m.bytes[r * rb + b] = static_cast<uint8_t>(rng());
        } else if (r < 64) {
            for (auto& v : row) v = normal(rng);
            q::quantize_row(t, row.data(), m.bytes.data() + r * rb, n_in);
        } else {
            std::copy_n(m.bytes.data() + (r % 64) * rb, rb, m.bytes.data() + r * rb);
        }
    }
    m.x.resize(n_in * n_tokens);
    for (auto& v : m.x) v = normal(rng);
    cache.push_back({{t, key_n}, std::move(m)});
    return cache.back().second;
}

void run(benchmark::State& state, DType t, q::Isa isa, int64_t n_tokens, int64_t n_out,
         int64_t n_in) {
    if (!q::isa_supported(isa)) {
        state.SkipWithError("ISA not supported by this CPU");
        return;
    }
    const Matrix& m = matrix(t, n_tokens, n_in);
    std::vector<float> y(n_out * n_tokens);
    q::Activations acts;
    for (auto _ : state) {
        acts.prepare(t, m.x.data(), n_in, n_tokens, isa);
        q::matmul(t, m.bytes.data(), n_in, 0, n_out, acts, y.data(), n_out, isa);
        benchmark::DoNotOptimize(y.data());
    }
    const double bytes = static_cast<double>(tandem::row_bytes(t, n_in) * n_out);
    state.counters["GB/s"] =
        benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["tok/s"] = benchmark::Counter(static_cast<double>(n_tokens),
                                                 benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(std::string(q::isa_name(q::kernels(t, isa).isa)));
}

const DType kTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,   DType::Q4_0,
                        DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K,   DType::Q3_K,
                        DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS};

int register_all() {
    for (DType t : kTypes) {
        for (q::Isa isa : {q::Isa::Avx512, q::Isa::Avx2, q::Isa::Scalar}) {
            const std::string suffix =
                std::string(tandem::dtype_name(t)) + "/" + std::string(q::isa_name(isa));
            benchmark::RegisterBenchmark(("Matvec/" + suffix).c_str(), run, t, isa, 1, kOut, kIn)
                ->Unit(benchmark::kMillisecond);
            benchmark::RegisterBenchmark(("MatvecHot/" + suffix).c_str(), run, t, isa, 1, kOutHot,
                                         kIn)
                ->Unit(benchmark::kMicrosecond);
            benchmark::RegisterBenchmark(("Prefill32/" + suffix).c_str(), run, t, isa, 32, kOut,
                                         kIn)
                ->Unit(benchmark::kMillisecond);
            benchmark::RegisterBenchmark(("MatvecWide/" + suffix).c_str(), run, t, isa, 1, kOutWide,
                                         kInWide)
                ->Unit(benchmark::kMillisecond);
            if (tandem::dtype_traits(t).block_elems <= 32)
                benchmark::RegisterBenchmark(("MatvecNarrow/" + suffix).c_str(), run, t, isa, 1,
                                             kOutNarrow, kInNarrow)
                    ->Unit(benchmark::kMicrosecond);
        }
    }
    return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
