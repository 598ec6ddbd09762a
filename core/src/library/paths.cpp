#include "tandem/library/paths.h"

#include <cstdlib>

namespace tandem::library {
namespace {

std::filesystem::path env_path(const char* name) {
    const char* v = std::getenv(name);
    return (v && *v) ? std::filesystem::path(v) : std::filesystem::path();
}

std::filesystem::path home_dir() {
    auto h = env_path("HOME");
    return h.empty() ? std::filesystem::path("/tmp") : h;
}

}  // namespace

LibraryPaths paths_under(const std::filesystem::path& home) {
    return {home, home / "models", home / "library.db"};
}

LibraryPaths default_paths() {
    if (auto t = env_path("TANDEM_HOME"); !t.empty()) return paths_under(t);
    if (auto x = env_path("XDG_DATA_HOME"); !x.empty()) return paths_under(x / "tandem");
    return paths_under(home_dir() / ".local" / "share" / "tandem");
}

LibraryPaths resolve_paths(const std::filesystem::path& home) {
    return home.empty() ? default_paths() : paths_under(home);
}

std::vector<std::filesystem::path> known_model_dirs() {
    std::vector<std::filesystem::path> candidates;
    if (auto c = env_path("LLAMA_CACHE"); !c.empty()) {
        candidates.push_back(c);
    } else if (auto x = env_path("XDG_CACHE_HOME"); !x.empty()) {
        candidates.push_back(x / "llama.cpp");
    } else {
        candidates.push_back(home_dir() / ".cache" / "llama.cpp");
    }
    candidates.push_back(home_dir() / ".lmstudio" / "models");
    candidates.push_back(home_dir() / ".cache" / "lm-studio" / "models");
    std::vector<std::filesystem::path> found;
    std::error_code ec;
    for (auto& c : candidates)
        if (std::filesystem::is_directory(c, ec)) found.push_back(c);
    return found;
}

}  // namespace tandem::library
