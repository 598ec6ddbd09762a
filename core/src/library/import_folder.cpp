#include <algorithm>

#include "tandem/common/error.h"
#include "tandem/library/catalog.h"
#include "tandem/library/quant_pick.h"

namespace tandem::library {

ScanReport import_folder(Catalog& catalog, const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    ScanReport report;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw Error("library: " + dir.string() + " is not a folder");
    // The split-part grouping of hub listings works on local paths just as well.
    std::vector<RepoFile> found;
    for (auto it = fs::recursive_directory_iterator(
             dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        auto rel = fs::relative(it->path(), dir, ec).generic_string();
        RepoFile f;
        f.path = rel;
        f.size = it->file_size(ec);
        found.push_back(std::move(f));
    }
    std::sort(found.begin(), found.end(),
              [](const RepoFile& a, const RepoFile& b) { return a.path < b.path; });
    for (const auto& group : group_gguf_files(found)) {
        std::vector<fs::path> parts;
        for (const auto& f : group.files) parts.push_back(dir / f.path);
        if (!group.complete()) {
            report.skipped.emplace_back(
                parts.front(), "split model with " + std::to_string(parts.size()) + " of " +
                                   std::to_string(group.split_count) + " parts");
            continue;
        }
        try {
            auto rec = inspect_gguf(parts);
            if (auto old = catalog.find(rec.path().string())) {
                rec.source_repo = old->source_repo;
                rec.source_revision = old->source_revision;
                rec.managed = old->managed;
                for (size_t i = 0; i < rec.files.size() && i < old->files.size(); ++i)
                    if (old->files[i].size == rec.files[i].size)
                        rec.files[i].sha256 = old->files[i].sha256;
            }
            catalog.upsert(rec);
            report.added.push_back(std::move(rec));
        } catch (const Error& e) {
            report.skipped.emplace_back(parts.front(), e.what());
        }
    }
    return report;
}

}  // namespace tandem::library
