#pragma once
// Hugging Face Hub client: model search, a repository's file list (with LFS sha256), download URLs.
// Endpoints (base from HttpOptions::endpoint):
//   GET /api/models?search=Q&filter=gguf&sort=downloads&direction=-1&limit=N
//   GET /api/models/{repo}/tree/{revision}?recursive=1
//   GET /{repo}/resolve/{revision}/{path}   (redirects to a CDN; Range requests)
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/library/http.h"

namespace tandem::library {

enum class SearchSort { Downloads, Likes, Updated };

struct ModelSummary {
    std::string id;  // "owner/name"
    uint64_t downloads = 0;
    uint64_t likes = 0;
    std::string last_modified;  // ISO 8601 as the hub sends it ("" when absent)
    std::vector<std::string> tags;
};

struct RepoFile {
    std::string path;    // inside the repo, '/'-separated
    uint64_t size = 0;   // bytes (the LFS object's size for LFS files)
    std::string sha256;  // LFS oid (lower-case hex); "" for small non-LFS files
};

class HfClient {
  public:
    explicit HfClient(HttpOptions options) : options_(std::move(options)) {}

    // Models matching `query`; with gguf_only, only repositories tagged gguf.
    std::vector<ModelSummary> search(const std::string& query, SearchSort sort, int limit,
                                     bool gguf_only = true) const;
    // Every file of the repo at `revision` (folders left out).
    std::vector<RepoFile> list_files(const std::string& repo,
                                     const std::string& revision = "main") const;
    std::string resolve_url(const std::string& repo, const std::string& revision,
                            const std::string& path) const;
    const HttpOptions& options() const { return options_; }

  private:
    HttpOptions options_;
};

SearchSort parse_search_sort(const std::string& name);  // downloads|likes|updated

}  // namespace tandem::library
