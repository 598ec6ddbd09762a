#pragma once
// The Chats page: the conversation list with search, archive and a context menu on the left; on
// the right the model picker, chat settings and live stats, an error banner, the messages (with
// edit, regenerate and branch switching) and the input box with Send / Stop. Generation runs on
// a GenerationWorker in its own QThread; database reads and small writes (rename, archive,
// branch switch, settings) go through AsyncChatStore.
#include <QCheckBox>
#include <QComboBox>
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
#include "sampling_presets.h"

namespace tandem::ui {

class ChatPage : public QWidget {
    Q_OBJECT
  public:
    explicit ChatPage(std::shared_ptr<store::ChatStore> store, QWidget* parent = nullptr);
    // Stops a running generation and joins the worker thread.
    ~ChatPage() override;

    ConversationListModel* conversations() { return conversations_; }
    QListView* conversationList() { return list_; }
    MessageView* messageView() { return view_; }
    QPlainTextEdit* input() { return input_; }
    QPushButton* sendButton() { return send_; }
    QPushButton* stopButton() { return stop_; }
    QLineEdit* searchBox() { return search_; }
    QCheckBox* showArchivedBox() { return showArchived_; }
    QComboBox* modelPicker() { return picker_; }
    QLabel* errorBanner() { return banner_; }
    QLabel* statsLabel() { return stats_; }
    qint64 currentConversation() const { return current_; }
    qint64 editingMessage() const { return editing_; }
    bool isGenerating() const { return generating_; }
    void setMaxTokens(int n) { maxTokens_ = n; }
    void setRuntime(const RuntimeChoice& r) { runtime_ = r; }
    const RuntimeChoice& runtime() const { return runtime_; }
    // Settings the next new conversation starts with.
    void setNewChatSettings(const QString& systemPrompt, const ChatSampling& sampling);

  public slots:
    void loadModel(const QString& path);
    // Models the picker offers: (name, path) pairs; the loaded one stays selected.
    void setModelChoices(const QList<QPair<QString, QString>>& models);
    // Sends `text` in the open conversation (a new one when none is open).
    void send(const QString& text);
    void sendInput();
    void stop();
    void newConversation();
    void openConversation(qint64 id);
    // Re-reads the open conversation's active path (after a reply, an edit or a branch switch).
    void reloadConversation();
    // Puts a user message into the input box; the next Send saves it as a new branch.
    void beginEdit(qint64 messageId, const QString& text);
    void cancelEdit();
    // A new reply in place of assistant message `messageId` (kept as a sibling branch).
    void regenerate(qint64 messageId);
    // Shows the previous (-1) or next (+1) sibling of `messageId`.
    void switchBranch(qint64 messageId, int delta);
    void editChatSettings();
    void setArchived(qint64 id, bool archived);

  signals:
    void modelReady(const QString& name);
    void modelFailed(const QString& message);
    void tokenShown(const QString& text);
    void generationFinished(qint64 assistantMessageId, const QString& finishReason);
    void conversationOpened(qint64 id);
    // The view now shows what the database holds for the open conversation.
    void conversationReloaded(qint64 id);
    void modelPicked(const QString& path);
    // The cluster run (members, shares, live timings) changed; inactive when running locally.
    void clusterStatus(const tandem::ui::ClusterStatus& status);
    // A node of the cluster was lost; the banner shows `message`.
    void nodeLost(const QString& message);

  private:
    void showError(const QString& message);
    void updateButtons();
    void showListMenu(const QPoint& pos);
    void writeThenReload(std::function<void(store::ChatStore&)> write);
    void startGenerating();

    std::shared_ptr<store::ChatStore> store_;
    std::unique_ptr<store::AsyncChatStore> async_;
    QThread thread_;
    GenerationWorker* worker_ = nullptr;  // lives on thread_; deleted after thread_ is joined

    ConversationListModel* conversations_ = nullptr;
    QLineEdit* search_ = nullptr;
    QCheckBox* showArchived_ = nullptr;
    QListView* list_ = nullptr;
    QComboBox* picker_ = nullptr;
    QPushButton* settingsButton_ = nullptr;
    QLabel* stats_ = nullptr;
    QLabel* banner_ = nullptr;
    QWidget* editBar_ = nullptr;
    MessageView* view_ = nullptr;
    QPlainTextEdit* input_ = nullptr;
    QPushButton* send_ = nullptr;
    QPushButton* stop_ = nullptr;

    RuntimeChoice runtime_;
    QString loadedPath_;
    qint64 current_ = -1;
    qint64 editing_ = -1;
    quint64 openTicket_ = 0;
    bool generating_ = false;
    bool modelLoaded_ = false;
    int maxTokens_ = 0;  // 0: the conversation's own max_tokens
    QString device_;
    QString newChatSettings_;  // JSON for the next new conversation
};

}  // namespace tandem::ui
