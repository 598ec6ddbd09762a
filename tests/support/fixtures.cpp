#include "fixtures.h"

#include <cstdlib>
#include <mutex>
#include <random>
#include <vector>

namespace tandem::test {

std::optional<std::filesystem::path> fixtures_dir() {
    if (const char* env = std::getenv("TANDEM_FIXTURES"); env && *env) {
        if (std::filesystem::is_directory(env)) return std::filesystem::path(env);
        return std::nullopt;
    }
    std::filesystem::path p(TANDEM_FIXTURES_DEFAULT);
    if (std::filesystem::is_directory(p)) return std::filesystem::canonical(p);
    return std::nullopt;
}

std::optional<std::filesystem::path> fixture(const std::string& relative) {
    auto root = fixtures_dir();
    if (!root) return std::nullopt;
    auto p = *root / relative;
    if (!std::filesystem::exists(p)) return std::nullopt;
    return p;
}

std::filesystem::path bin_dir() { return TANDEM_BIN_DIR; }
std::filesystem::path source_dir() { return TANDEM_SOURCE_DIR; }

std::string python() {
    std::filesystem::path p(TANDEM_PYTHON);
    return std::filesystem::exists(p) ? p.string() : std::string();
}

namespace {
struct TempDirs {
    std::mutex mu;
    std::vector<std::filesystem::path> dirs;
    ~TempDirs() {
        std::error_code ec;
        for (auto& d : dirs) std::filesystem::remove_all(d, ec);
    }
};
TempDirs& temp_dirs() {
    static TempDirs t;
    return t;
}
}  // namespace

std::filesystem::path temp_dir(const std::string& tag) {
    std::random_device rd;
    auto base = std::filesystem::temp_directory_path();
    for (int i = 0; i < 100; ++i) {
        auto p = base / ("tandem-test-" + tag + "-" + std::to_string(rd()));
        if (std::filesystem::create_directory(p)) {
            std::lock_guard lock(temp_dirs().mu);
            temp_dirs().dirs.push_back(p);
            return p;
        }
    }
    throw std::runtime_error("cannot create a temporary directory");
}

}  // namespace tandem::test
