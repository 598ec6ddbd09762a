#include "generation_worker.h"

#include <chrono>
#include <filesystem>

#include "fit_check.h"
#include "sampling_presets.h"
#include "tandem/backend/backend.h"
#include "tandem/common/error.h"
#include "tandem/engine/fallback_template.h"
#include "tandem/engine/generate.h"
#include "tandem/gguf/gguf.h"
#include "tandem/net/cluster_coordinator.h"
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
    : store_(std::move(store)) {
    qRegisterMetaType<tandem::ui::ClusterStatus>();
}

GenerationWorker::~GenerationWorker() = default;

void GenerationWorker::loadModel(const QString& path, const RuntimeChoice& runtime) {
    bool tooBig = false;
    try {
        engine_.reset();
        cluster_.reset();
        tok_.reset();
        model_.reset();
        const std::string file_path = path.toStdString();
        if (!std::filesystem::exists(file_path)) throw Error(file_path + ": no such file");
        const std::string backend = runtime.backend.toStdString();
        auto file = std::make_shared<gguf::File>(gguf::File::open(file_path));
        auto hp = engine::read_hparams(*file);
        if (!file->find("tokenizer.ggml.tokens"))
            throw Error(file_path + ": the model has no vocabulary (tokenizer.ggml.*)");
        modelName_ = std::filesystem::path(file_path).filename().string();
        if (!runtime.clusterNodes.isEmpty()) {
            // The group plans itself against every node's free memory (and refuses naming the
            // short node); the whole model is mapped here for the vocabulary and the template.
            const int64_t train = hp.n_ctx_train > 0 ? hp.n_ctx_train : runtime.contextSize;
            tok_.emplace(tokenizer::load_vocab(*file));
            model_ = engine::load_model(file, engine::ShardSpec::whole(hp));
            openCluster(file_path, runtime, std::min<int64_t>(runtime.contextSize, train), tooBig);
        } else {
            // Refuse before allocating: a model bigger than the device would swap or be killed.
            planner::DeviceBudget budget = deviceBudget(backend, runtime.device);
            if (runtime.memoryLimit > 0)
                budget.free_bytes = std::min<uint64_t>(budget.free_bytes, runtime.memoryLimit);
            const FitVerdict fit = checkFit(file_path, runtime.contextSize, budget);
            if (!fit.fits) {
                tooBig = true;
                throw Error(std::filesystem::path(file_path).filename().string() +
                            " is too big for this machine: " + fit.message.toStdString());
            }
            tok_.emplace(tokenizer::load_vocab(*file));
            model_ = engine::load_model(file, engine::ShardSpec::whole(hp));
            BackendOptions bo;
            bo.threads = runtime.threads;
            engine::EngineOptions eo;
            eo.n_ctx = fit.nCtx;
            engine_ = std::make_unique<engine::Engine>(
                model_, create_backend(backend, runtime.device, bo), eo);
        }
        emit modelLoaded(QString::fromStdString(modelName_), deviceText(), engine_->n_ctx());
        emitClusterStatus();
    } catch (const std::exception& e) {
        engine_.reset();
        cluster_.reset();
        tok_.reset();
        model_.reset();
        emit modelFailed(QString::fromUtf8(e.what()), tooBig);
        emitClusterStatus();
    }
}

void GenerationWorker::openCluster(const std::string& path, const RuntimeChoice& runtime,
                                   int64_t nCtx, bool& tooBig) {
    net::ClusterOptions co;
    for (const QString& n : runtime.clusterNodes) co.nodes.push_back(n.toStdString());
    co.paired = true;  // only paired peers: every connection authenticated and encrypted
    co.home = runtime.clusterHome.toStdString();
    co.backend = runtime.backend.toStdString();
    co.device = runtime.device;
    co.threads = runtime.threads;
    co.engine.n_ctx = nCtx;
    try {
        cluster_ = std::make_shared<net::ClusterCoordinator>(path, co);
    } catch (const std::exception& e) {
        // The group's own memory plan refused (planner::fit names the short node).
        const std::string what = e.what();
        tooBig = what.rfind("does not fit", 0) == 0;
        throw Error(tooBig ? std::filesystem::path(path).filename().string() +
                                 " is too big for this cluster: " + what
                           : "the cluster could not start: " + what);
    }
    engine_ = cluster_->take_engine();
}

QString GenerationWorker::deviceText() const {
    if (cluster_ && cluster_->clustered())
        return tr("cluster of %1: %2")
            .arg(cluster_->n_ranks())
            .arg(clusterStatusOf(cluster_->health(), {}).members());
    const auto& dev = engine_->backend().device();
    return QString::fromStdString(dev.backend + ": " + dev.name);
}

void GenerationWorker::emitClusterStatus() {
    const QString name = QString::fromStdString(modelName_);
    emit clusterStatus(cluster_ ? clusterStatusOf(cluster_->health(), name) : ClusterStatus{});
}

QString GenerationWorker::recoverCluster() {
    const ClusterStatus before = clusterStatusOf(cluster_->health(), {});
    const std::string why = cluster_->broken_reason();
    cluster_->recover();  // re-plans on the nodes that still answer, else the whole model here
    const ClusterStatus after = clusterStatusOf(cluster_->health(), {});
    QStringList lost;
    for (size_t r = 1; r < before.ranks.size(); ++r) {
        bool kept = false;
        for (const auto& a : after.ranks) kept |= a.address == before.ranks[r].address;
        if (!kept) lost << before.ranks[r].name;
    }
    if (lost.isEmpty()) lost << tr("a node");
    const QString where = after.active
                              ? tr("%1 (%2 nodes)").arg(after.members()).arg(after.ranks.size())
                              : tr("this machine alone");
    emitClusterStatus();
    return tr("%1 lost: continuing on %2. The conversation and the reply so far are kept. (%3)")
        .arg(lost.join(QStringLiteral(", ")), where, QString::fromStdString(why));
}

std::string GenerationWorker::renderPrompt(const std::string& systemPrompt,
                                           const std::vector<store::Message>& path) const {
    const auto& vocab = tok_->vocab();
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!systemPrompt.empty()) messages.push_back({{"role", "system"}, {"content", systemPrompt}});
    for (const auto& m : path)
        messages.push_back({{"role", store::role_name(m.role)}, {"content", m.content}});
    auto piece = [&](int32_t id) { return id >= 0 ? tok_->token_to_piece(id, true) : ""; };
    nlohmann::ordered_json ctx = {{"messages", messages},
                                  {"add_generation_prompt", true},
                                  {"bos_token", piece(vocab.bos_id)},
                                  {"eos_token", piece(vocab.eos_id)}};
    return render_template(engine::chat_template_for(*model_, *tok_), ctx);
}

void GenerationWorker::sendMessage(qint64 conversationId, const QString& userText, int maxTokens,
                                   const QString& newChat) {
    cancel_.store(false);
    try {
        if (!engine_) throw Error("no model is loaded: pick one above or in Models");
        if (conversationId < 0) {
            store::NewConversation c;
            c.title = titleFrom(userText);
            c.model = modelName_;
            if (!newChat.isEmpty()) {
                const auto j = nlohmann::json::parse(newChat.toStdString());
                c.system_prompt = j.value("system_prompt", std::string());
                if (j.contains("sampling")) c.sampling = j["sampling"];
            }
            conversationId = store_->create_conversation(c);
        }
        const int64_t userId = store_->append_user_message(conversationId, userText.toStdString());
        emit userMessageSaved(conversationId, userId);
        reply(conversationId, std::nullopt, maxTokens);
    } catch (const std::exception& e) {
        emit generationFailed(QString::fromUtf8(e.what()));
    }
}

void GenerationWorker::regenerate(qint64 conversationId, qint64 assistantMessageId, int maxTokens) {
    cancel_.store(false);
    try {
        if (!engine_) throw Error("no model is loaded: pick one above or in Models");
        const auto m = store_->message(assistantMessageId);
        if (m.role != store::Role::Assistant || !m.parent_id)
            throw Error("only an assistant reply can be regenerated");
        reply(conversationId, m.parent_id, maxTokens);
    } catch (const std::exception& e) {
        emit generationFailed(QString::fromUtf8(e.what()));
    }
}

void GenerationWorker::editMessage(qint64 conversationId, qint64 messageId, const QString& text,
                                   int maxTokens) {
    cancel_.store(false);
    try {
        if (!engine_) throw Error("no model is loaded: pick one above or in Models");
        const int64_t edited = store_->edit_message(messageId, text.toStdString());
        emit userMessageSaved(conversationId, edited);
        reply(conversationId, edited, maxTokens);
    } catch (const std::exception& e) {
        emit generationFailed(QString::fromUtf8(e.what()));
    }
}

void GenerationWorker::reply(qint64 conversationId, std::optional<int64_t> parent, int maxTokens) {
    // The heartbeat found a node gone while idle: continue on what is left before this turn.
    if (cluster_ && cluster_->broken()) {
        emit nodeLost(recoverCluster());
        emit deviceChanged(deviceText());
    }
    const auto conv = store_->conversation(conversationId);
    const ChatSampling sampling = samplingFromJson(conv.sampling);
    auto path = store_->active_path(conversationId);
    if (parent) {  // the path up to and including the parent
        size_t keep = 0;
        while (keep < path.size() && path[keep].id != *parent) ++keep;
        if (keep == path.size()) throw Error("the message to answer is not on the active path");
        path.resize(keep + 1);
    }
    const std::string prompt = renderPrompt(conv.system_prompt, path);
    // The template writes BOS itself; special tokens in it are parsed as such.
    auto ids = tok_->encode(prompt, false, true);
    if (static_cast<int64_t>(ids.size()) + 1 >= engine_->n_ctx())
        throw Error("the conversation (" + std::to_string(ids.size()) +
                    " tokens) does not fit the context of " + std::to_string(engine_->n_ctx()) +
                    "; start a new chat or raise the context in Settings");

    auto stream = store_->begin_assistant_message(conversationId, modelName_, parent);
    emit generationStarted(conversationId, stream.id());
    engine::GenerateOptions g;
    g.sampling = sampling.params;
    const int limit = maxTokens > 0 ? std::min(maxTokens, sampling.maxTokens) : sampling.maxTokens;
    g.max_tokens = int(std::min<int64_t>(limit, engine_->n_ctx() - int64_t(ids.size()) - 1));
    g.cancel = &cancel_;
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    auto lastReport = t0;
    int64_t tokens = 0;
    g.on_token = [&](int32_t) {
        ++tokens;
        const auto now = clock::now();
        if (now - lastReport < std::chrono::milliseconds(250)) return;
        lastReport = now;
        const double s = std::chrono::duration<double>(now - t0).count();
        emit progress(tokens, s > 0 ? double(tokens) / s : 0.0, engine_->n_past(),
                      engine_->n_ctx());
        if (cluster_) emitClusterStatus();
    };
    g.on_text = [&](std::string_view t) {
        stream.append(t);
        emit piece(QString::fromUtf8(t.data(), static_cast<qsizetype>(t.size())));
        return true;
    };
    engine::GenerateResult r;
    try {
        r = engine::generate(*engine_, ids, &*tok_, g);
    } catch (const std::exception&) {
        if (!cluster_ || !cluster_->broken()) throw;
        // A node was lost mid-reply: what streamed stays (interrupted), the group is rebuilt
        // from what is left, and the next message runs there.
        stream.interrupt("node lost");
        const QString line = recoverCluster();
        emit nodeLost(line);
        emit deviceChanged(deviceText());
        throw Error(line.toStdString());
    }
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
    if (cluster_) emitClusterStatus();
    emit generationFinished(id, QString::fromStdString(reason), tps, engine_->n_past(),
                            engine_->n_ctx());
}

}  // namespace tandem::ui
