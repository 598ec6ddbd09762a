// tandem-cli rm: remove a model from the library. Files the library downloaded are deleted;
// files imported from elsewhere (LM Studio, llama.cpp) are left alone unless asked.
#include <cstdio>
#include <memory>

#include "command.h"
#include "tandem/common/error.h"
#include "tandem/library/catalog.h"
#include "tandem/library/format.h"
#include "tandem/library/paths.h"

namespace {

struct RmOptions {
    std::string key;
    std::string home;
    bool keep_files = false;
    bool delete_files = false;
};

tandem::cli::Register reg("rm", "Remove a model from the library", [](CLI::App& sub) {
    auto o = std::make_shared<RmOptions>();
    sub.add_option("model", o->key, "Id, owner/name:QUANT, name or path (see tandem-cli list)")
        ->required();
    sub.add_option("--home", o->home,
                   "Library folder (default: $TANDEM_HOME or ~/.local/share/tandem)");
    auto keep =
        sub.add_flag("--keep-files", o->keep_files, "Only forget the model, keep its files");
    sub.add_flag("--delete-files", o->delete_files,
                 "Also delete files that were imported, not pulled")
        ->excludes(keep);
    return [o]() -> int {
        using namespace tandem::library;
        namespace fs = std::filesystem;
        auto paths = resolve_paths(o->home);
        Catalog catalog(paths.catalog);
        auto m = catalog.find(o->key);
        if (!m) throw tandem::Error("no model '" + o->key + "' in " + paths.catalog.string());
        bool delete_files = !o->keep_files && (m->managed || o->delete_files);
        catalog.remove(m->id);
        uint64_t freed = 0;
        if (delete_files) {
            for (const auto& f : m->files) {
                std::error_code ec;
                auto size = fs::file_size(f.path, ec);
                if (fs::remove(f.path, ec)) freed += size;
                if (ec)
                    std::fprintf(stderr, "warning: cannot delete %s: %s\n", f.path.c_str(),
                                 ec.message().c_str());
            }
            // Empty folders the pull created (<models>/<owner>/<name>) go too.
            if (m->managed) {
                std::error_code ec;
                for (auto dir = m->path().parent_path();
                     dir != paths.models_dir &&
                     dir.string().rfind(paths.models_dir.string(), 0) == 0;
                     dir = dir.parent_path())
                    if (!fs::is_empty(dir, ec) || !fs::remove(dir, ec)) break;
            }
        }
        std::printf(
            "removed %lld %s%s\n", static_cast<long long>(m->id), m->name.c_str(),
            delete_files ? (" (" + human_bytes(freed) + " freed)").c_str() : " (files kept)");
        return 0;
    };
});

}  // namespace
