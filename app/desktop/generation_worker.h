#pragma once
// Model loading and generation off the UI thread. The worker lives on its own QThread (ChatPage
// moves it there); its slots are called through queued invocations and answer with signals, so
// the UI never waits on a model load, a decode step or a database write. Every write of a chat
// turn (the user message, the streamed reply) happens here, on the worker's thread.
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <optional>

#include "tandem/engine/engine.h"
#include "tandem/store/chat_store.h"
#include "tandem/tokenizer/tokenizer.h"

namespace tandem::ui {

class GenerationWorker : public QObject {
    Q_OBJECT
  public:
    explicit GenerationWorker(std::shared_ptr<store::ChatStore> store);
    ~GenerationWorker() override;

    // Thread-safe: asks a running generation to stop after the current token.
    void requestStop() { cancel_.store(true); }

  public slots:
    // Opens a GGUF file on the CPU backend (threads 0: all physical cores).
    void loadModel(const QString& path, int threads);
    // Appends `userText` to the conversation (a new one when conversationId < 0, titled from the
    // text), then streams the assistant reply into the store and through `piece`.
    void sendMessage(qint64 conversationId, const QString& userText, int maxTokens);

  signals:
    void modelLoaded(const QString& name, const QString& device, qint64 contextSize);
    void modelFailed(const QString& message);
    // The conversation now holds the user message (emitted before generation starts).
    void userMessageSaved(qint64 conversationId, qint64 messageId);
    void generationStarted(qint64 conversationId, qint64 assistantMessageId);
    void piece(const QString& text);
    void generationFinished(qint64 assistantMessageId, const QString& finishReason,
                            double tokensPerSecond, qint64 contextUsed, qint64 contextSize);
    void generationFailed(const QString& message);

  private:
    std::string renderPrompt(const std::vector<store::Message>& path) const;

    std::shared_ptr<store::ChatStore> store_;
    std::shared_ptr<engine::Model> model_;
    std::unique_ptr<engine::Engine> engine_;
    std::optional<tokenizer::Tokenizer> tok_;
    std::string modelName_;
    std::atomic<bool> cancel_{false};
};

}  // namespace tandem::ui
