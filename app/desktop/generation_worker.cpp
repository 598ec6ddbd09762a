#include "generation_worker.h"

#include <filesystem>

#include "tandem/common/error.h"
#include "tandem/engine/fallback_template.h"
#include "tandem/engine/generate.h"
#include "tandem/gguf/gguf.h"
#include "tandem/template/template.h"
#include "tandem/tokenizer/vocab.h"

namespace tandem::ui {

namespace {

std::string titleFrom(const QString& text) {
    QString t = text.simplified();
    if (t.size() > 48) t = t.left(47) + QChar(0x2026);
    return t.isEmpty() ? std::string("New chat") : t.toStdString();
}

}  // namespace

GenerationWorker::GenerationWorker(std::shared_ptr<store::ChatStore> store)
    : store_(std::move(store)) {}

GenerationWorker::~GenerationWorker() = default;

void GenerationWorker::loadModel(const QString& path, int threads) {
    try {
        engine_.reset();
        tok_.reset();
        model_.reset();
        auto file = std::make_shared<gguf::File>(gguf::File::open(path.toStdString()));
        auto hp = engine::read_hparams(*file);
        if (!file->find("tokenizer.ggml.tokens"))
            throw Error(path.toStdString() + ": the model has no vocabulary (tokenizer.ggml.*)");
        tok_.emplace(tokenizer::load_vocab(*file));
        model_ = engine::load_model(file, engine::ShardSpec::whole(hp));
        BackendOptions bo;
        bo.threads = threads;
        engine_ = std::make_unique<engine::Engine>(model_, create_backend("cpu", 0, bo));
        modelName_ = std::filesystem::path(path.toStdString()).filename().string();
        const auto& dev = engine_->backend().device();
        emit modelLoaded(QString::fromStdString(modelName_),
                         QString::fromStdString(dev.backend + ": " + dev.name), engine_->n_ctx());
    } catch (const std::exception& e) {
        engine_.reset();
        tok_.reset();
        model_.reset();
        emit modelFailed(QString::fromUtf8(e.what()));
    }
}

std::string GenerationWorker::renderPrompt(const std::vector<store::Message>& path) const {
    const auto& vocab = tok_->vocab();
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    for (const auto& m : path)
        messages.push_back({{"role", store::role_name(m.role)}, {"content", m.content}});
    auto piece = [&](int32_t id) { return id >= 0 ? tok_->token_to_piece(id, true) : ""; };
    nlohmann::ordered_json ctx = {{"messages", messages},
                                  {"add_generation_prompt", true},
                                  {"bos_token", piece(vocab.bos_id)},
                                  {"eos_token", piece(vocab.eos_id)}};
    return render_template(engine::chat_template_for(*model_, *tok_), ctx);
}

void GenerationWorker::sendMessage(qint64 conversationId, const QString& userText, int maxTokens) {
    cancel_.store(false);
    try {
        if (!engine_) throw Error("no model is loaded: pick one in Models or start with --model");
        if (conversationId < 0) {
            store::NewConversation c;
            c.title = titleFrom(userText);
            c.model = modelName_;
            conversationId = store_->create_conversation(c);
        }
        const int64_t userId = store_->append_user_message(conversationId, userText.toStdString());
        emit userMessageSaved(conversationId, userId);

        auto path = store_->active_path(conversationId);
        const std::string prompt = renderPrompt(path);
        // The template writes BOS itself; special tokens in it are parsed as such.
        auto ids = tok_->encode(prompt, false, true);
        if (static_cast<int64_t>(ids.size()) + 1 >= engine_->n_ctx())
            throw Error("the conversation (" + std::to_string(ids.size()) +
                        " tokens) does not fit the context of " + std::to_string(engine_->n_ctx()));

        auto stream = store_->begin_assistant_message(conversationId, modelName_);
        emit generationStarted(conversationId, stream.id());
        engine::GenerateOptions g;
        g.max_tokens = std::min<int64_t>(maxTokens, engine_->n_ctx() - int64_t(ids.size()) - 1);
        g.cancel = &cancel_;
        g.on_text = [&](std::string_view t) {
            stream.append(t);
            emit piece(QString::fromUtf8(t.data(), static_cast<qsizetype>(t.size())));
            return true;
        };
        auto r = engine::generate(*engine_, ids, &*tok_, g);
        const double tps = r.decode_seconds > 0 ? double(r.n_decoded) / r.decode_seconds : 0.0;
        const int64_t id = stream.id();
        std::string reason;
        if (r.stop == engine::StopReason::Cancelled) {
            reason = "interrupted";
            stream.interrupt(reason);
        } else {
            store::FinishInfo info;
            info.finish_reason = r.stop == engine::StopReason::Length ? "length" : "stop";
            info.prompt_tokens = r.n_prompt;
            info.completion_tokens = static_cast<int64_t>(r.ids.size());
            info.tokens_per_second = tps;
            reason = info.finish_reason;
            stream.finish(info);
        }
        emit generationFinished(id, QString::fromStdString(reason), tps, engine_->n_past(),
                                engine_->n_ctx());
    } catch (const std::exception& e) {
        emit generationFailed(QString::fromUtf8(e.what()));
    }
}

}  // namespace tandem::ui
