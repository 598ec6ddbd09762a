#pragma once
// Shared helpers of the quant tests: deterministic random rows, raw file I/O and a runner for
// the gguf Python reference (gguf_reference.py beside this file).
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fixtures.h"
#include "tandem/common/dtype.h"

namespace tandem::quant::test {

inline std::vector<uint8_t> read_file(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)),
                                std::istreambuf_iterator<char>());
}

template <class T>
inline void write_file(const std::filesystem::path& p, const std::vector<T>& v) {
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()),
            static_cast<std::streamsize>(v.size() * sizeof(T)));
}

inline std::vector<float> as_floats(const std::vector<uint8_t>& bytes) {
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), v.size() * 4);
    return v;
}

// Values a model's weights and activations look like: mostly normal, with every 4th block of 32
// scaled up or down (so block scales vary by orders of magnitude) and a few outliers.
inline std::vector<float> random_row(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::uniform_int_distribution<int> pick(0, 99);
    std::vector<float> v(static_cast<size_t>(n));
    float block_scale = 1.f;
    for (int64_t i = 0; i < n; ++i) {
        if (i % 32 == 0) {
            const int r = pick(rng);
            block_scale = r < 10 ? 1e-3f : r < 20 ? 30.f : r < 25 ? 1e-6f : 1.f;
        }
        float x = normal(rng) * block_scale;
        if (pick(rng) == 0) x *= 8.f;
        v[static_cast<size_t>(i)] = x;
    }
    return v;
}

// Runs gguf_reference.py on a jobs file; returns "" on success, else the reason.
inline std::string run_gguf_reference(const std::filesystem::path& jobs) {
    const std::string py = tandem::test::python();
    const auto script = tandem::test::source_dir() / "tests" / "quant" / "gguf_reference.py";
    const auto log = jobs.parent_path() / "python.log";
    const std::string cmd = "'" + py + "' '" + script.string() + "' '" + jobs.string() + "' > '" +
                            log.string() + "' 2>&1";
    if (std::system(cmd.c_str()) != 0) {
        const auto out = read_file(log);
        return "gguf_reference.py failed: " + std::string(out.begin(), out.end());
    }
    return "";
}

}  // namespace tandem::quant::test
