#include "message_view.h"

#include <QFontDatabase>
#include <QScrollBar>
#include <QTextDocument>

namespace tandem::ui {

namespace {
QString speaker(const QString& role) {
    if (role == QLatin1String("user")) return MessageView::tr("You");
    if (role == QLatin1String("system")) return MessageView::tr("System");
    return MessageView::tr("Assistant");
}
}  // namespace

MessageView::MessageView(QWidget* parent) : QTextBrowser(parent) {
    setOpenExternalLinks(true);
    setFrameShape(QFrame::NoFrame);
    document()->setDocumentMargin(18);
    // Code blocks and inline code use the system's fixed font.
    document()->setDefaultStyleSheet(
        QStringLiteral("pre, code { font-family: '%1'; }")
            .arg(QFontDatabase::systemFont(QFontDatabase::FixedFont).family()));
    renderTimer_.setSingleShot(true);
    renderTimer_.setInterval(30);
    connect(&renderTimer_, &QTimer::timeout, this, &MessageView::renderNow);
}

void MessageView::setMessages(std::vector<Entry> messages) {
    messages_ = std::move(messages);
    renderNow();
}

void MessageView::appendMessage(const QString& role, const QString& text) {
    messages_.push_back({role, text});
    scheduleRender();
}

void MessageView::appendToLast(const QString& text) {
    if (messages_.empty()) messages_.push_back({QStringLiteral("assistant"), {}});
    messages_.back().text += text;
    scheduleRender();
}

void MessageView::scheduleRender() {
    if (!renderTimer_.isActive()) renderTimer_.start();
}

QString MessageView::markdown() const {
    QString md;
    for (const auto& m : messages_) {
        md += QStringLiteral("#### ") + speaker(m.role) + QStringLiteral("\n\n");
        md += m.text.isEmpty() ? QStringLiteral("…") : m.text;
        // An unclosed fence while streaming would swallow the rest of the page: close it.
        if (m.text.count(QStringLiteral("```")) % 2 == 1) md += QStringLiteral("\n```");
        md += QStringLiteral("\n\n");
    }
    return md;
}

void MessageView::renderNow() {
    renderTimer_.stop();
    QScrollBar* bar = verticalScrollBar();
    const bool atBottom = bar->value() >= bar->maximum() - 4;
    setMarkdown(markdown());
    if (atBottom) bar->setValue(bar->maximum());
}

}  // namespace tandem::ui
