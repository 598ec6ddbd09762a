#pragma once
// Model loading and generation off the UI thread. The worker lives on its own QThread (ChatPage
// moves it there); its slots are called through queued invocations and answer with signals, so
// the UI never waits on a model load, a decode step or a database write. Every write of a chat
// turn (the user message, an edit, the streamed reply) happens here, on the worker's thread.
#include <QObject>
#include <QString>
#include <QStringList>

#include <atomic>
#include <memory>
#include <optional>

#include "cluster_status.h"
#include "tandem/engine/engine.h"
#include "tandem/store/chat_store.h"
#include "tandem/tokenizer/tokenizer.h"

namespace tandem::ui {

// Where and how a model runs (from the Settings page).
struct RuntimeChoice {
    QString backend = QStringLiteral("cpu");
    int device = 0;
    int threads = 0;         // 0: all physical cores
    int contextSize = 4096;  // capped at the model's training context
    // > 0: plan against at most this many free bytes (keeps room for other programs; tests)
    quint64 memoryLimit = 0;
    // Non-empty: this machine coordinates, and the model runs tensor-parallel over it (rank 0)
    // and these paired nodes ("node-id@host:port"), reached over SecureChannels with the
    // identity and peers.json in `clusterHome` (the node service's home).
    QStringList clusterNodes;
    QString clusterHome;
};

class GenerationWorker : public QObject {
    Q_OBJECT
  public:
    explicit GenerationWorker(std::shared_ptr<store::ChatStore> store);
    ~GenerationWorker() override;

    // Thread-safe: asks a running generation to stop after the current token.
    void requestStop() { cancel_.store(true); }

  public slots:
    // Plans the model against the device's free memory first: a model that does not fit is
    // refused (modelFailed with tooBig) before anything is allocated.
    void loadModel(const QString& path, const tandem::ui::RuntimeChoice& runtime);
    // Appends `userText` to the conversation (a new one when conversationId < 0, titled from the
    // text, with the system prompt and sampling of `newChat`: {"system_prompt": "...",
    // "sampling": {...}}), then streams the assistant reply into the store and through `piece`.
    void sendMessage(qint64 conversationId, const QString& userText, int maxTokens,
                     const QString& newChat = {});
    // A new reply to the parent of `assistantMessageId` (a sibling branch of that reply).
    void regenerate(qint64 conversationId, qint64 assistantMessageId, int maxTokens);
    // Saves `text` as a new sibling of user message `messageId` and answers it.
    void editMessage(qint64 conversationId, qint64 messageId, const QString& text, int maxTokens);

  signals:
    void modelLoaded(const QString& name, const QString& device, qint64 contextSize);
    void modelFailed(const QString& message, bool tooBig);
    // The conversation now holds the user message (emitted before generation starts).
    void userMessageSaved(qint64 conversationId, qint64 messageId);
    void generationStarted(qint64 conversationId, qint64 assistantMessageId);
    void piece(const QString& text);
    // While generating, about 4 times a second.
    void progress(qint64 tokens, double tokensPerSecond, qint64 contextUsed, qint64 contextSize);
    void generationFinished(qint64 assistantMessageId, const QString& finishReason,
                            double tokensPerSecond, qint64 contextUsed, qint64 contextSize);
    void generationFailed(const QString& message);
    // The cluster run's members, shares and live timings: after a load, about 4 times a second
    // while generating, and after a node was lost (then with what is left).
    void clusterStatus(const tandem::ui::ClusterStatus& status);
    // A node was lost and the model runs on what is left: "node-b lost: continuing on ...".
    void nodeLost(const QString& message);
    // Where the model runs now changed (after a lost node): the status line's text.
    void deviceChanged(const QString& device);

  private:
    std::string renderPrompt(const std::string& systemPrompt,
                             const std::vector<store::Message>& path) const;
    // Streams a reply to `parent` (nullopt: the end of the active path).
    void reply(qint64 conversationId, std::optional<int64_t> parent, int maxTokens);
    // Opens the model tensor-parallel over this machine and runtime.clusterNodes; `tooBig` is
    // set when the group's memory plan refused.
    void openCluster(const std::string& path, const RuntimeChoice& runtime, int64_t nCtx,
                     bool& tooBig);
    // After the cluster broke: re-plans on the nodes left (or runs locally) and says so.
    QString recoverCluster();
    void emitClusterStatus();
    QString deviceText() const;

    std::shared_ptr<store::ChatStore> store_;
    std::shared_ptr<engine::Model> model_;
    // Declared before engine_: the engine (rank 0) goes first, then the group it drove.
    std::shared_ptr<net::ClusterCoordinator> cluster_;
    std::unique_ptr<engine::Engine> engine_;
    std::optional<tokenizer::Tokenizer> tok_;
    std::string modelName_;
    std::atomic<bool> cancel_{false};
};

}  // namespace tandem::ui

Q_DECLARE_METATYPE(tandem::ui::RuntimeChoice)
