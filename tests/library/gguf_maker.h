#pragma once
// Small GGUF models written by the PyPI gguf package (tests/library/make_test_gguf.py), with what
// gguf's own reader found in them as the reference.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tandem::test {

struct MadeGguf {
    std::vector<std::filesystem::path> parts;
    uint64_t parameters = 0;
    std::map<std::string, uint64_t> quant_mix;
    uint64_t total_size = 0;
};

// Runs the script with `args` (e.g. "--name Tiny --split-tensors 3"); nullopt when the Python
// with the gguf package is not installed.
std::optional<MadeGguf> make_gguf(const std::filesystem::path& out, const std::string& args = "");

}  // namespace tandem::test

#define TANDEM_GGUF_OR_SKIP(var, out, args)                            \
    auto var##_opt = ::tandem::test::make_gguf(out, args);             \
    if (!var##_opt)                                                    \
        GTEST_SKIP() << "Python with the gguf package not found (run " \
                        "packaging/install-deps.sh)";                  \
    const auto& var = *var##_opt
