#pragma once
// Where the library keeps models and its catalog.
//   $TANDEM_HOME (when set) else $XDG_DATA_HOME/tandem else ~/.local/share/tandem
//   models:  <home>/models      catalog: <home>/library.db
#include <filesystem>
#include <string>
#include <vector>

namespace tandem::library {

struct LibraryPaths {
    std::filesystem::path home;
    std::filesystem::path models_dir;
    std::filesystem::path catalog;
};

LibraryPaths paths_under(const std::filesystem::path& home);
LibraryPaths default_paths();
// paths_under(home) when home is given (a --home option), else default_paths().
LibraryPaths resolve_paths(const std::filesystem::path& home);

// Folders where other tools keep GGUF files, those that exist on this machine:
// llama.cpp's cache ($LLAMA_CACHE, else $XDG_CACHE_HOME/llama.cpp or ~/.cache/llama.cpp) and
// LM Studio's model folders (~/.lmstudio/models, ~/.cache/lm-studio/models).
std::vector<std::filesystem::path> known_model_dirs();

}  // namespace tandem::library
