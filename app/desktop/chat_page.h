#pragma once
// The Chats page: the conversation list with search on the left; on the right the model and
// live stats, an error banner, the messages and the input box with Send / Stop. Generation runs
// on a GenerationWorker in its own QThread; database reads go through AsyncChatStore.
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QThread>
#include <QWidget>

#include <memory>

#include "conversation_list_model.h"
#include "generation_worker.h"
#include "message_view.h"

namespace tandem::ui {

class ChatPage : public QWidget {
    Q_OBJECT
  public:
    explicit ChatPage(std::shared_ptr<store::ChatStore> store, QWidget* parent = nullptr);
    // Stops a running generation and joins the worker thread.
    ~ChatPage() override;

    ConversationListModel* conversations() { return conversations_; }
    MessageView* messageView() { return view_; }
    QPlainTextEdit* input() { return input_; }
    QPushButton* sendButton() { return send_; }
    QPushButton* stopButton() { return stop_; }
    QLineEdit* searchBox() { return search_; }
    QLabel* errorBanner() { return banner_; }
    qint64 currentConversation() const { return current_; }
    bool isGenerating() const { return generating_; }
    void setMaxTokens(int n) { maxTokens_ = n; }

  public slots:
    void loadModel(const QString& path, int threads = 0);
    // Sends `text` in the open conversation (a new one when none is open).
    void send(const QString& text);
    void sendInput();
    void stop();
    void newConversation();
    void openConversation(qint64 id);

  signals:
    void modelReady(const QString& name);
    void modelFailed(const QString& message);
    void tokenShown(const QString& text);
    void generationFinished(qint64 assistantMessageId, const QString& finishReason);
    void conversationOpened(qint64 id);

  private:
    void showError(const QString& message);
    void updateButtons();

    std::shared_ptr<store::ChatStore> store_;
    std::unique_ptr<store::AsyncChatStore> async_;
    QThread thread_;
    GenerationWorker* worker_ = nullptr;  // lives on thread_; deleted after thread_ is joined

    ConversationListModel* conversations_ = nullptr;
    QLineEdit* search_ = nullptr;
    QListView* list_ = nullptr;
    QLabel* modelLabel_ = nullptr;
    QLabel* stats_ = nullptr;
    QLabel* banner_ = nullptr;
    MessageView* view_ = nullptr;
    QPlainTextEdit* input_ = nullptr;
    QPushButton* send_ = nullptr;
    QPushButton* stop_ = nullptr;

    qint64 current_ = -1;
    quint64 openTicket_ = 0;
    bool generating_ = false;
    bool modelLoaded_ = false;
    int maxTokens_ = 1024;
    QString device_;
};

}  // namespace tandem::ui
