#pragma once
// The messages of the open conversation, rendered as Markdown (headings, lists, tables and fenced
// code blocks in a monospace font). Streamed text is appended to the last message; re-rendering
// is coalesced to at most one per frame-ish interval so a fast model does not starve the UI.
#include <QString>
#include <QTextBrowser>
#include <QTimer>

#include <vector>

namespace tandem::ui {

class MessageView : public QTextBrowser {
    Q_OBJECT
  public:
    struct Entry {
        QString role;  // "user", "assistant", "system"
        QString text;  // Markdown
    };

    explicit MessageView(QWidget* parent = nullptr);

    void setMessages(std::vector<Entry> messages);
    void appendMessage(const QString& role, const QString& text);
    // Adds streamed text to the last message.
    void appendToLast(const QString& text);
    const std::vector<Entry>& messages() const { return messages_; }
    // Renders now (tests and screenshots call it instead of waiting for the timer).
    void renderNow();

  private:
    void scheduleRender();
    QString markdown() const;

    std::vector<Entry> messages_;
    QTimer renderTimer_;
};

}  // namespace tandem::ui
