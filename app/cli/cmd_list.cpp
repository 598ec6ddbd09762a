// tandem-cli list: the models in the library (optionally importing GGUF folders first).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.h"
#include "tandem/library/catalog.h"
#include "tandem/library/format.h"
#include "tandem/library/paths.h"

namespace {

struct ListOptions {
    std::string home;
    std::vector<std::string> scan;
    bool scan_known = false;
    bool json = false;
};

tandem::cli::Register reg("list", "List the models in the library", [](CLI::App& sub) {
    auto o = std::make_shared<ListOptions>();
    sub.add_option("--home", o->home,
                   "Library folder (default: $TANDEM_HOME or ~/.local/share/tandem)");
    sub.add_option("--scan", o->scan, "Import the GGUF models under this folder first");
    sub.add_flag("--scan-known", o->scan_known,
                 "Import from llama.cpp's cache and LM Studio's model folders first");
    sub.add_flag("--json", o->json, "Machine-readable output");
    return [o]() -> int {
        using namespace tandem::library;
        auto paths = resolve_paths(o->home);
        Catalog catalog(paths.catalog);
        std::vector<std::filesystem::path> dirs(o->scan.begin(), o->scan.end());
        if (o->scan_known)
            for (auto& d : known_model_dirs()) dirs.push_back(d);
        for (const auto& d : dirs) {
            auto report = import_folder(catalog, d);
            std::fprintf(stderr, "scanned %s: %zu model(s) registered, %zu skipped\n", d.c_str(),
                         report.added.size(), report.skipped.size());
            for (const auto& [file, why] : report.skipped)
                std::fprintf(stderr, "  skipped %s: %s\n", file.c_str(), why.c_str());
        }
        auto models = catalog.list();
        // Files deleted behind the library's back are shown, not silently listed as usable.
        auto missing = [](const tandem::library::ModelRecord& m) {
            std::error_code ec;
            for (const auto& f : m.files)
                if (!std::filesystem::is_regular_file(f.path, ec)) return true;
            return false;
        };
        if (o->json) {
            auto j = nlohmann::json::array();
            for (const auto& m : models) {
                auto files = nlohmann::json::array();
                for (const auto& f : m.files)
                    files.push_back(
                        {{"path", f.path.string()}, {"size", f.size}, {"sha256", f.sha256}});
                j.push_back({{"id", m.id},
                             {"name", m.name},
                             {"architecture", m.architecture},
                             {"parameters", m.parameters},
                             {"quant", m.quant},
                             {"quant_mix", m.quant_mix},
                             {"size_bytes", m.size_bytes},
                             {"context_length", m.context_length},
                             {"source_repo", m.source_repo},
                             {"source_revision", m.source_revision},
                             {"managed", m.managed},
                             {"added_at", m.added_at},
                             {"last_used_at", m.last_used_at},
                             {"missing_files", missing(m)},
                             {"files", files}});
            }
            std::printf("%s\n", j.dump(2).c_str());
            return 0;
        }
        if (models.empty()) {
            std::printf("the library is empty (%s); try: tandem-cli pull owner/name:QUANT\n",
                        paths.catalog.c_str());
            return 0;
        }
        std::printf("%4s  %-32s %-10s %8s %10s %8s %-10s %s\n", "ID", "NAME", "QUANT", "PARAMS",
                    "SIZE", "CONTEXT", "ARCH", "SOURCE");
        for (const auto& m : models) {
            std::string source = m.source_repo.empty() ? m.path().string() : m.source_repo;
            if (missing(m))
                source += "  (files missing: tandem-cli rm " + std::to_string(m.id) + ")";
            std::printf("%4lld  %-32s %-10s %8s %10s %8llu %-10s %s\n",
                        static_cast<long long>(m.id), m.name.substr(0, 32).c_str(), m.quant.c_str(),
                        human_count(m.parameters).c_str(), human_bytes(m.size_bytes).c_str(),
                        static_cast<unsigned long long>(m.context_length), m.architecture.c_str(),
                        source.c_str());
        }
        return 0;
    };
});

}  // namespace
