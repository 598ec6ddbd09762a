#pragma once
// Where tests find the shared oracles (../shared/fixtures or $TANDEM_FIXTURES) and the built
// binaries. A test whose fixture is absent skips with a visible message instead of passing.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

namespace tandem::test {

// The fixtures root if it exists, else nullopt.
std::optional<std::filesystem::path> fixtures_dir();
// fixtures_dir()/relative if that exists, else nullopt.
std::optional<std::filesystem::path> fixture(const std::string& relative);
std::filesystem::path bin_dir();     // build/bin
std::filesystem::path source_dir();  // repository root
std::string python();                // Python with the test references ("" if absent)
// A fresh temporary folder, removed at exit of the test process.
std::filesystem::path temp_dir(const std::string& tag);

}  // namespace tandem::test

// Skips the current test, with the reason printed, when a fixture is missing.
#define TANDEM_FIXTURE_OR_SKIP(var, relative)                                          \
    auto var##_opt = ::tandem::test::fixture(relative);                                 \
    if (!var##_opt) GTEST_SKIP() << "fixture not found: " << (relative)                 \
                                 << " (set TANDEM_FIXTURES or put ../shared/fixtures beside the repo)"; \
    const std::filesystem::path var = *var##_opt
