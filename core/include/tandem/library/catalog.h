#pragma once
// The SQLite catalog of local models (library.db). Safe to open from several processes at once
// (WAL, busy timeout); one Catalog object is used from one thread at a time.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tandem/library/model_record.h"

struct sqlite3;

namespace tandem::library {

class Catalog {
  public:
    // Opens or creates the catalog (and its folder). Throws tandem::Error naming the file when
    // it is not a catalog SQLite can open, or has a newer schema than this build knows.
    explicit Catalog(const std::filesystem::path& db_path);
    ~Catalog();
    Catalog(const Catalog&) = delete;
    Catalog& operator=(const Catalog&) = delete;

    // Inserts, or updates the record with the same first file path (keeping its id and
    // added_at). Returns the id and sets rec.id.
    int64_t upsert(ModelRecord& rec);
    std::vector<ModelRecord> list() const;  // most recently used first, then by name
    std::optional<ModelRecord> get(int64_t id) const;
    // By id ("12"), path of the first file, "repo:QUANT", repo, or name (case-insensitive).
    std::optional<ModelRecord> find(const std::string& key) const;
    bool remove(int64_t id);
    void touch(int64_t id);  // last_used_at = now

    const std::filesystem::path& path() const { return path_; }

  private:
    std::filesystem::path path_;
    sqlite3* db_ = nullptr;
};

struct ScanReport {
    std::vector<ModelRecord> added;                                      // new or updated records
    std::vector<std::pair<std::filesystem::path, std::string>> skipped;  // file, why
};

// Finds GGUF models under `dir` (recursively; split parts grouped, vision projectors and
// unfinished downloads left out) and registers each one that inspects cleanly. Files that are
// not usable models are reported in `skipped`, never registered.
ScanReport import_folder(Catalog& catalog, const std::filesystem::path& dir);

}  // namespace tandem::library
