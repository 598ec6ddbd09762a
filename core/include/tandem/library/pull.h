#pragma once
// Pulling a model from a hub into the library: resolve "owner/name[@rev][:QUANT]" against the
// repo listing, download every file of the chosen quant (split parts included) with sha256
// checks, then register it in the catalog. A model is registered only when all its files are
// in place, verified and readable as GGUF; nothing partial or bad ever enters the catalog.
#include <filesystem>
#include <functional>
#include <memory>

#include "tandem/library/catalog.h"
#include "tandem/library/downloader.h"
#include "tandem/library/quant_pick.h"

namespace tandem::library {

struct PullEvent {
    size_t file_index = 0;  // 0-based among file_count
    size_t file_count = 0;
    std::string file;  // repo path of the file being fetched
    DownloadProgress progress;
};
using PullProgressFn = std::function<void(const PullEvent&)>;

struct PullOptions {
    DownloadOptions download;          // download.http carries endpoint, token, proxy
    std::filesystem::path models_dir;  // files land in <models_dir>/<owner>/<name>/<path>
};

struct PullResult {
    ModelRecord record;
    std::string quant;
    bool already_present = false;  // everything was there and verified; nothing fetched
    uint64_t bytes_transferred = 0;
};

PullResult pull_model(const ModelSpec& spec, Catalog& catalog, const PullOptions& options,
                      const PullProgressFn& progress = {},
                      std::shared_ptr<DownloadControl> control = nullptr);

}  // namespace tandem::library
