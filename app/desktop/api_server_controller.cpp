#include "api_server_controller.h"

#include <filesystem>

#include "background.h"
#include "tandem/backend/backend.h"
#include "tandem/common/error.h"
#include "tandem/server/api.h"
#include "tandem/server/engine_generator.h"
#include "tandem/server/http.h"
#include "tandem/tokenizer/vocab.h"

namespace tandem::ui {

struct ApiServerController::Running {
    // Destroyed in reverse: the HTTP server stops accepting before the API (and its engine) go.
    std::unique_ptr<server::ApiServer> api;
    std::unique_ptr<server::HttpServer> http;
    ~Running() {
        if (http) http->stop();
        http.reset();
        api.reset();
    }
};

ApiServerController::ApiServerController(QObject* parent) : QObject(parent) {}

ApiServerController::~ApiServerController() {
    running_.reset();  // joins here: the app is closing
}

QString ApiServerController::url() const {
    return QStringLiteral("http://127.0.0.1:%1/v1").arg(port_);
}

void ApiServerController::start(const QString& modelPath, quint16 port,
                                const RuntimeChoice& runtime) {
    stop();
    const quint64 ticket = ++ticket_;
    const std::string path = modelPath.toStdString();
    runInBackground(
        this,
        [path, port, runtime] {
            if (path.empty()) throw Error("no model is loaded: pick one in Chats or Models first");
            auto file = std::make_shared<gguf::File>(gguf::File::open(path));
            if (!file->find("tokenizer.ggml.tokens"))
                throw Error(path + ": the model has no vocabulary");
            auto hp = engine::read_hparams(*file);
            tokenizer::Tokenizer tok(tokenizer::load_vocab(*file));
            auto model = engine::load_model(file, engine::ShardSpec::whole(hp));
            BackendOptions bo;
            bo.threads = runtime.threads;
            engine::EngineOptions eo;
            eo.n_ctx = std::min<int64_t>(runtime.contextSize, hp.n_ctx_train);
            auto engine = std::make_unique<engine::Engine>(
                model, create_backend(runtime.backend.toStdString(), runtime.device, bo), eo);
            const std::string id = std::filesystem::path(path).stem().string();
            auto r = std::make_shared<Running>();
            r->api = std::make_unique<server::ApiServer>(
                std::make_unique<server::EngineGenerator>(id, std::move(engine), std::move(tok)),
                server::ApiOptions{});
            auto* api = r->api.get();
            r->http = std::make_unique<server::HttpServer>(
                "127.0.0.1", port, server::HttpLimits{},
                [api](const server::HttpRequest& q, server::HttpResponder& w) {
                    api->handle(q, w);
                });
            return std::make_pair(r, QString::fromStdString(id));
        },
        [this, ticket](Outcome<std::pair<std::shared_ptr<Running>, QString>> out) {
            if (ticket != ticket_) {  // stopped or restarted meanwhile: drop it off the UI thread
                if (out.ok()) {
                    auto r = std::move(out.value->first);
                    runInBackground(
                        this,
                        [r]() mutable {
                            r.reset();
                            return true;
                        },
                        [](Outcome<bool>) {});
                }
                return;
            }
            if (!out.ok()) return emit failed(out.error);
            running_ = out.value->first;
            modelId_ = out.value->second;
            port_ = running_->http->port();
            emit started(url());
        });
}

void ApiServerController::stop() {
    ++ticket_;
    if (!running_) return;
    auto r = std::move(running_);
    running_.reset();
    port_ = 0;
    runInBackground(
        this,
        [r]() mutable {
            r.reset();
            return true;
        },
        [this](Outcome<bool>) { emit stopped(); });
}

}  // namespace tandem::ui
