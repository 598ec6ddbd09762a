// tandem-cli list: the models in the library (optionally importing GGUF folders first).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.h"
#include "tandem/library/catalog.h"
#include "tandem/library/fit_hint.h"
#include "tandem/library/format.h"
#include "tandem/library/paths.h"

namespace {

struct ListOptions {
    std::string home;
    std::vector<std::string> scan;
    bool scan_known = false;
    bool json = false;
    int64_t ctx = 4096;
};

tandem::cli::Register reg("list", "List the models in the library", [](CLI::App& sub) {
    auto o = std::make_shared<ListOptions>();
    sub.add_option("--home", o->home,
                   "Library folder (default: $TANDEM_HOME or ~/.local/share/tandem)");
    sub.add_option("--scan", o->scan, "Import the GGUF models under this folder first");
    sub.add_flag("--scan-known", o->scan_known,
                 "Import from llama.cpp's cache and LM Studio's model folders first");
    sub.add_flag("--json", o->json, "Machine-readable output");
    sub.add_option("--ctx", o->ctx, "Context the FIT column plans for (capped at the model's)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
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
        // Whether each model fits this machine's free memory at the default context (the
        // memory planner's plan from the GGUF header).
        FitHintOptions fit_options;
        fit_options.n_ctx = o->ctx;
        fit_options.local = this_machine();
        auto hint = [&](const ModelRecord& m) {
            if (missing(m)) return FitHint{FitVerdict::Unknown, 0, 0, 0, "files missing"};
            return fit_hint(m, fit_options);
        };
        if (o->json) {
            auto j = nlohmann::json::array();
            for (const auto& m : models) {
                const FitHint h = hint(m);
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
                             {"fit",
                              {{"verdict", fit_label(h.verdict)},
                               {"n_ctx", h.n_ctx},
                               {"need_bytes", h.need_bytes},
                               {"free_bytes", h.free_bytes},
                               {"text", h.text}}},
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
        std::printf("%4s  %-32s %-10s %8s %10s %8s %-10s %-6s %s\n", "ID", "NAME", "QUANT",
                    "PARAMS", "SIZE", "CONTEXT", "ARCH", "FIT", "SOURCE");
        for (const auto& m : models) {
            std::string source = m.source_repo.empty() ? m.path().string() : m.source_repo;
            if (missing(m))
                source += "  (files missing: tandem-cli rm " + std::to_string(m.id) + ")";
            std::printf("%4lld  %-32s %-10s %8s %10s %8llu %-10s %-6s %s\n",
                        static_cast<long long>(m.id), m.name.substr(0, 32).c_str(), m.quant.c_str(),
                        human_count(m.parameters).c_str(), human_bytes(m.size_bytes).c_str(),
                        static_cast<unsigned long long>(m.context_length), m.architecture.c_str(),
                        fit_label(hint(m).verdict).c_str(), source.c_str());
        }
        std::printf("FIT: at %lld tokens of context in this machine's %s of available memory "
                    "(tandem-cli fit -m FILE for the plan)\n",
                    static_cast<long long>(o->ctx),
                    human_bytes(fit_options.local.front().free_bytes).c_str());
        return 0;
    };
});

}  // namespace
