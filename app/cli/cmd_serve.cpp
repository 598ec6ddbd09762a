// tandem-cli serve: the OpenAI-compatible API on the loaded model (see docs/api.md). Binds
// 127.0.0.1 unless told otherwise; prints "listening on http://HOST:PORT" once it accepts, so
// scripts can start it with --port 0 and read the port; stops on SIGINT/SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "command.h"
#include "runtime_options.h"
#include "tandem/common/error.h"
#include "tandem/server/api.h"
#include "tandem/server/engine_generator.h"

namespace {

struct ServeCmd {
    tandem::cli::RuntimeOptions rt;
    std::string host = "127.0.0.1";
    int port = 8080;
    std::string model_id;
    tandem::server::ApiOptions api;
    tandem::server::HttpLimits http;
};

tandem::cli::Register reg(
    "serve", "Serve the model over an OpenAI-compatible HTTP API", [](CLI::App& sub) {
        auto o = std::make_shared<ServeCmd>();
        tandem::cli::add_runtime_options(sub, o->rt);
        sub.add_option("--host", o->host, "address to listen on (0.0.0.0: every interface)")
            ->capture_default_str();
        sub.add_option("--port", o->port, "TCP port (0: any free port)")
            ->check(CLI::Range(0, 65535))
            ->capture_default_str();
        sub.add_option("--model-id", o->model_id,
                       "the model's name in the API (default: the file name without .gguf)");
        sub.add_option(
            "--api-key", o->api.api_key,
            "require 'Authorization: Bearer <key>' (default: $TANDEM_API_KEY, else none)");
        sub.add_option("--cors-origin", o->api.cors_origin,
                       "allow browser requests from this origin ('*' for any); off by default");
        sub.add_option("--max-queue", o->api.max_queue,
                       "requests that may wait for the model; more get 429")
            ->check(CLI::Range(1, 10000))
            ->capture_default_str();
        sub.add_option("--max-body", o->http.max_body_bytes, "largest request body in bytes")
            ->check(CLI::Range(1024, 256 << 20))
            ->capture_default_str();
        sub.add_option("--max-connections", o->http.max_connections, "open connections at most")
            ->check(CLI::Range(1, 10000))
            ->capture_default_str();
        sub.add_option("--default-max-tokens", o->api.max_tokens_default,
                       "max_tokens when a request gives none")
            ->check(CLI::Range(1, 1 << 20))
            ->capture_default_str();
        return [o]() -> int {
            // Signals are taken by sigwait below, so every thread started from here blocks them.
            sigset_t stop_signals;
            sigemptyset(&stop_signals);
            sigaddset(&stop_signals, SIGINT);
            sigaddset(&stop_signals, SIGTERM);
            pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

            if (o->api.api_key.empty())
                if (const char* k = std::getenv("TANDEM_API_KEY")) o->api.api_key = k;
            std::string id = o->model_id;
            if (id.empty()) id = std::filesystem::path(o->rt.model).stem().string();
            auto m = tandem::cli::open_model(o->rt, true);
            if (!m.tok) throw tandem::Error("serve: " + o->rt.model + " has no vocabulary");
            std::unique_ptr<tandem::server::Generator> gen =
                std::make_unique<tandem::server::EngineGenerator>(id, std::move(m.engine),
                                                                  std::move(*m.tok));
            if (m.cluster) gen = tandem::cli::recovering_generator(std::move(gen), m);
            tandem::server::ApiServer api(std::move(gen), o->api);
            tandem::server::HttpServer http(
                o->host, static_cast<uint16_t>(o->port), o->http,
                [&api](const tandem::server::HttpRequest& r, tandem::server::HttpResponder& w) {
                    api.handle(r, w);
                });
            std::printf("listening on http://%s:%u (model '%s'%s)\n", o->host.c_str(),
                        static_cast<unsigned>(http.port()), id.c_str(),
                        o->api.api_key.empty() ? "" : ", API key required");
            std::fflush(stdout);
            int sig = 0;
            sigwait(&stop_signals, &sig);
            std::fprintf(stderr, "serve: stopping (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
            http.stop();
            return 0;
        };
    });

}  // namespace
