// tandem-cli pull: download a model from the hub into the library (resumable; Ctrl-C keeps what
// arrived and the same command continues).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>

#include "command.h"
#include "tandem/library/fit_hint.h"
#include "tandem/library/format.h"
#include "tandem/library/paths.h"
#include "tandem/library/pull.h"

namespace {

struct PullCliOptions {
    std::string spec;
    std::string home;
    std::string endpoint, token, proxy;
    int connections = 8;
    bool list = false;
};

// Set by SIGINT/SIGTERM (a lock-free store is all a handler may do); a watcher thread turns it
// into DownloadControl::cancel().
std::atomic<bool> g_interrupted{false};

extern "C" void on_interrupt(int) {
    g_interrupted.store(true);
}

tandem::cli::Register reg(
    "pull", "Download a model: owner/name[@revision][:QUANT]", [](CLI::App& sub) {
        auto o = std::make_shared<PullCliOptions>();
        sub.add_option("model", o->spec, "e.g. bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M")
            ->required();
        sub.add_option("--home", o->home,
                       "Library folder (default: $TANDEM_HOME or ~/.local/share/tandem)");
        sub.add_option("--endpoint", o->endpoint,
                       "Hub base URL (default: $HF_ENDPOINT or huggingface.co)");
        sub.add_option("--token", o->token, "Access token (default: $HF_TOKEN)");
        sub.add_option("--proxy", o->proxy, "Proxy URL (default: the usual *_proxy variables)");
        sub.add_option("--connections", o->connections, "Parallel connections per file")
            ->check(CLI::Range(1, 32));
        sub.add_flag("--list", o->list, "Only list the quantizations the repository offers");
        return [o]() -> int {
            using namespace tandem::library;
            auto spec = ModelSpec::parse(o->spec);
            auto paths = resolve_paths(o->home);
            PullOptions po;
            po.models_dir = paths.models_dir;
            po.download.http = HttpOptions::from_env();
            if (!o->endpoint.empty()) po.download.http.endpoint = o->endpoint;
            if (!o->token.empty()) po.download.http.token = o->token;
            if (!o->proxy.empty()) po.download.http.proxy = o->proxy;
            po.download.connections = o->connections;

            if (o->list) {
                HfClient hub(po.download.http);
                auto groups = group_gguf_files(hub.list_files(spec.repo, spec.revision));
                // FIT: a size-only estimate against this machine's available memory (the
                // context is planned once the file is here: tandem-cli list).
                const FitHintOptions fit_options;
                std::printf("%-24s %6s %12s %-7s\n", "QUANT", "FILES", "SIZE", "FIT");
                for (const auto& g : groups)
                    std::printf("%-24s %6zu %12s %-7s%s\n", g.quant.c_str(), g.files.size(),
                                human_bytes(g.total_size()).c_str(),
                                fit_label(fit_hint_for_download(g.total_size(), fit_options).verdict)
                                    .c_str(),
                                g.complete() ? "" : "  (incomplete split)");
                return 0;
            }

            Catalog catalog(paths.catalog);
            auto control = std::make_shared<DownloadControl>();
            std::signal(SIGINT, on_interrupt);
            std::signal(SIGTERM, on_interrupt);
            std::atomic<bool> finished{false};
            std::thread watcher([&] {
                while (!finished) {
                    if (g_interrupted) control->cancel();
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                }
            });
            struct StopWatcher {
                std::atomic<bool>& finished;
                std::thread& t;
                ~StopWatcher() {
                    finished = true;
                    t.join();
                }
            } stop_watcher{finished, watcher};
            const bool tty = ::isatty(STDERR_FILENO) != 0;
            auto last_line = std::chrono::steady_clock::now();
            auto show = [&](const PullEvent& e) {
                auto now = std::chrono::steady_clock::now();
                bool final = e.progress.verifying;
                if (!tty && !final && now - last_line < std::chrono::seconds(5)) return;
                last_line = now;
                double pct = e.progress.total
                                 ? 100.0 * double(e.progress.done) / double(e.progress.total)
                                 : 0;
                std::fprintf(stderr, "%s[%zu/%zu] %s  %5.1f%%  %s/%s  %s/s  ETA %s%s",
                             tty ? "\r\033[K" : "", e.file_index + 1, e.file_count, e.file.c_str(),
                             pct, human_bytes(e.progress.done).c_str(),
                             human_bytes(e.progress.total).c_str(),
                             human_bytes(uint64_t(e.progress.bytes_per_second)).c_str(),
                             human_duration(e.progress.eta_seconds).c_str(),
                             final ? "  verifying sha256\n" : (tty ? "" : "\n"));
                std::fflush(stderr);
            };
            PullResult r;
            try {
                r = pull_model(spec, catalog, po, show, control);
            } catch (const DownloadCancelled&) {
                std::fprintf(stderr, "\ncancelled; run the same command again to resume\n");
                return 130;
            }
            const auto& m = r.record;
            std::printf("%s %s:%s  (%s, %s parameters, %s)\n  id %lld  %s\n",
                        r.already_present ? "already in the library:" : "pulled", spec.repo.c_str(),
                        r.quant.c_str(), m.architecture.c_str(), human_count(m.parameters).c_str(),
                        human_bytes(m.size_bytes).c_str(), static_cast<long long>(m.id),
                        m.path().c_str());
            return 0;
        };
    });

}  // namespace
