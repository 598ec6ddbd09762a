#include "tandem/library/pull.h"

#include <sys/statvfs.h>

#include <algorithm>

#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "tandem/library/sha256.h"

namespace tandem::library {
namespace fs = std::filesystem;

namespace {

// Repo paths come from the network: no absolute paths, no way out of the model's folder.
fs::path safe_relative(const std::string& repo_path, const std::string& repo) {
    fs::path p(repo_path);
    if (p.empty() || p.is_absolute())
        throw Error("hf: " + repo + ": refusing file path '" + repo_path + "'");
    for (const auto& part : p)
        if (part == ".." || part == ".")
            throw Error("hf: " + repo + ": refusing file path '" + repo_path + "'");
    return p;
}

uint64_t free_bytes(const DownloadOptions& o, const fs::path& dir) {
    if (o.free_space) return o.free_space(dir);
    struct statvfs st {};
    if (::statvfs(dir.c_str(), &st) != 0) return UINT64_MAX;
    return uint64_t(st.f_bavail) * uint64_t(st.f_frsize);
}

// True when `dest` already holds exactly this file (size, then sha256 when the hub gave one).
bool already_there(const fs::path& dest, const RepoFile& f,
                   const std::optional<ModelRecord>& known) {
    std::error_code ec;
    if (!fs::is_regular_file(dest, ec) || fs::file_size(dest, ec) != f.size) return false;
    if (f.sha256.empty()) return true;
    if (known)
        for (const auto& mf : known->files)
            if (mf.path == dest && mf.sha256 == f.sha256) return true;  // verified when pulled
    return sha256_file(dest) == f.sha256;
}

}  // namespace

PullResult pull_model(const ModelSpec& spec, Catalog& catalog, const PullOptions& options,
                      const PullProgressFn& progress, std::shared_ptr<DownloadControl> control) {
    if (!control) control = std::make_shared<DownloadControl>();
    HfClient hub(options.download.http);
    auto listing = hub.list_files(spec.repo, spec.revision);
    auto groups = group_gguf_files(listing);
    const QuantGroup& group = pick_quant(groups, spec.quant, spec.repo);

    const fs::path model_dir = options.models_dir / safe_relative(spec.repo, spec.repo);
    std::vector<fs::path> dests;
    for (const auto& f : group.files) dests.push_back(model_dir / safe_relative(f.path, spec.repo));
    std::error_code ec;
    fs::create_directories(model_dir, ec);
    if (ec) throw Error("library: cannot create " + model_dir.string() + ": " + ec.message());

    auto known = catalog.find(dests.front().string());
    std::vector<bool> present(group.files.size());
    uint64_t need = 0;
    for (size_t i = 0; i < group.files.size(); ++i) {
        present[i] = already_there(dests[i], group.files[i], known);
        if (present[i]) continue;
        uint64_t partial =
            fs::exists(part_path(dests[i]), ec) ? fs::file_size(part_path(dests[i]), ec) : 0;
        need += group.files[i].size - std::min(partial, group.files[i].size);
    }
    // The whole model must fit before its first part starts, not just the next file.
    uint64_t avail = free_bytes(options.download, model_dir);
    if (need > 0 && avail < need + options.download.reserve_bytes)
        throw Error("library: not enough disk space for " + spec.repo + ":" + group.quant + " in " +
                    model_dir.string() + ": need " + std::to_string(need) + " bytes, " +
                    std::to_string(avail) + " free");

    PullResult result;
    result.quant = group.quant;
    result.already_present =
        need == 0 && std::all_of(present.begin(), present.end(), [](bool b) { return b; });
    for (size_t i = 0; i < group.files.size(); ++i) {
        if (present[i]) continue;
        DownloadRequest req;
        req.url = hub.resolve_url(spec.repo, spec.revision, group.files[i].path);
        req.dest = dests[i];
        req.expected_size = group.files[i].size;
        req.expected_sha256 = group.files[i].sha256;
        if (req.expected_sha256.empty())
            log_warn("library: " + group.files[i].path +
                     " has no sha256 in the listing; size only");
        auto r = download_file(
            req, options.download,
            [&](const DownloadProgress& p) {
                if (progress) progress({i, group.files.size(), group.files[i].path, p});
            },
            control);
        result.bytes_transferred += r.bytes_transferred;
    }

    ModelRecord rec;
    try {
        rec = inspect_gguf(dests);
    } catch (const Error& e) {
        throw Error("library: " + spec.repo + ":" + group.quant +
                    " was downloaded but is not a usable model, not registered: " + e.what());
    }
    for (size_t i = 0; i < rec.files.size(); ++i) rec.files[i].sha256 = group.files[i].sha256;
    rec.source_repo = spec.repo;
    rec.source_revision = spec.revision;
    rec.managed = true;
    // The name users pull by ("Q4_K_M"), when the file name carries one.
    if (rec.quant.empty() || quant_from_filename(group.files[0].path)) rec.quant = group.quant;
    if (known) rec.last_used_at = known->last_used_at;
    catalog.upsert(rec);
    result.record = rec;
    return result;
}

}  // namespace tandem::library
