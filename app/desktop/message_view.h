#pragma once
// The messages of the open conversation, rendered as Markdown (headings, lists, tables and fenced
// code blocks in a monospace font, each with a "Copy code" link). Under each finished message are
// its actions: Edit (user), Regenerate (assistant) and, where a message has siblings, the branch
// switcher "‹ 2/3 ›". Streamed text is appended to the last message; re-rendering is coalesced
// so a fast model does not starve the UI.
#include <QString>
#include <QTextBrowser>
#include <QTimer>

#include <vector>

namespace tandem::ui {

class MessageView : public QTextBrowser {
    Q_OBJECT
  public:
    struct Entry {
        QString role;   // "user", "assistant", "system"
        QString text;   // Markdown
        qint64 id = 0;  // 0 while not saved yet (no actions then)
        int siblingIndex = 0;
        int siblingCount = 1;
    };

    explicit MessageView(QWidget* parent = nullptr);

    void setMessages(std::vector<Entry> messages);
    void appendMessage(const QString& role, const QString& text, qint64 id = 0);
    // Adds streamed text to the last message.
    void appendToLast(const QString& text);
    const std::vector<Entry>& messages() const { return messages_; }
    // Code blocks of the last render, in order (what "Copy code" copies).
    const std::vector<QString>& codeBlocks() const { return codeBlocks_; }
    // Renders now (tests and screenshots call it instead of waiting for the timer).
    void renderNow();
    // Runs the action of a link of the view ("tandem:edit/12", "tandem:copy/0", ...).
    void activate(const QUrl& url);
    // Hides the actions (while generating nothing may be edited).
    void setActionsEnabled(bool enabled);

  signals:
    void editRequested(qint64 messageId, const QString& text);
    void regenerateRequested(qint64 messageId);
    // delta -1: the previous sibling, +1: the next.
    void branchRequested(qint64 messageId, int delta);
    void codeCopied(const QString& code);

  private:
    void scheduleRender();
    QString markdown();

    std::vector<Entry> messages_;
    std::vector<QString> codeBlocks_;
    bool actions_ = true;
    QTimer renderTimer_;
};

}  // namespace tandem::ui
