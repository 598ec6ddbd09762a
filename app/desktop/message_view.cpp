#include "message_view.h"

#include <QApplication>
#include <QClipboard>
#include <QDesktopServices>
#include <QFontDatabase>
#include <QScrollBar>
#include <QTextDocument>
#include <QUrl>

namespace tandem::ui {

namespace {

QString speaker(const QString& role) {
    if (role == QLatin1String("user")) return MessageView::tr("You");
    if (role == QLatin1String("system")) return MessageView::tr("System");
    return MessageView::tr("Assistant");
}

bool isFence(const QString& line) {
    return line.trimmed().startsWith(QLatin1String("```"));
}

}  // namespace

MessageView::MessageView(QWidget* parent) : QTextBrowser(parent) {
    setOpenLinks(false);  // links are actions (tandem:...) or opened by the desktop
    setFrameShape(QFrame::NoFrame);
    document()->setDocumentMargin(18);
    // Code blocks and inline code use the system's fixed font.
    document()->setDefaultStyleSheet(
        QStringLiteral("pre, code { font-family: '%1'; }")
            .arg(QFontDatabase::systemFont(QFontDatabase::FixedFont).family()));
    renderTimer_.setSingleShot(true);
    renderTimer_.setInterval(30);
    connect(&renderTimer_, &QTimer::timeout, this, &MessageView::renderNow);
    connect(this, &QTextBrowser::anchorClicked, this, &MessageView::activate);
}

void MessageView::setMessages(std::vector<Entry> messages) {
    messages_ = std::move(messages);
    renderNow();
}

void MessageView::appendMessage(const QString& role, const QString& text, qint64 id) {
    Entry e;
    e.role = role;
    e.text = text;
    e.id = id;
    messages_.push_back(std::move(e));
    scheduleRender();
}

void MessageView::appendToLast(const QString& text) {
    if (messages_.empty()) messages_.push_back({QStringLiteral("assistant"), {}});
    messages_.back().text += text;
    scheduleRender();
}

void MessageView::setActionsEnabled(bool enabled) {
    if (actions_ == enabled) return;
    actions_ = enabled;
    scheduleRender();
}

void MessageView::scheduleRender() {
    if (!renderTimer_.isActive()) renderTimer_.start();
}

QString MessageView::markdown() {
    codeBlocks_.clear();
    QString md;
    for (const auto& m : messages_) {
        md += QStringLiteral("#### ") + speaker(m.role);
        if (m.siblingCount > 1 && m.id > 0) {
            // The branch switcher: < 2/3 >
            md += QStringLiteral("  [‹](tandem:prev/%1) %2/%3 [›](tandem:next/%1)")
                      .arg(m.id)
                      .arg(m.siblingIndex + 1)
                      .arg(m.siblingCount);
        }
        md += QStringLiteral("\n\n");
        if (m.text.isEmpty()) {
            md += QStringLiteral("…");
        } else {
            // Each fenced block gets a "Copy code" link above it.
            bool inCode = false;
            QString code;
            for (const QString& line : m.text.split(QLatin1Char('\n'))) {
                if (isFence(line)) {
                    if (!inCode) {
                        md += QStringLiteral("[Copy code](tandem:copy/%1)\n\n")
                                  .arg(codeBlocks_.size());
                        code.clear();
                        codeBlocks_.push_back({});
                    } else {
                        codeBlocks_.back() = code;
                    }
                    inCode = !inCode;
                } else if (inCode) {
                    code += (code.isEmpty() ? QString() : QStringLiteral("\n")) + line;
                }
                md += line + QLatin1Char('\n');
            }
            // An unclosed fence while streaming would swallow the rest of the page: close it.
            if (inCode) {
                codeBlocks_.back() = code;
                md += QStringLiteral("```\n");
            }
        }
        if (actions_ && m.id > 0) {
            if (m.role == QLatin1String("user"))
                md += QStringLiteral("\n[✎ Edit](tandem:edit/%1)\n").arg(m.id);
            else if (m.role == QLatin1String("assistant"))
                md += QStringLiteral("\n[↻ Regenerate](tandem:regen/%1)\n").arg(m.id);
        }
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

void MessageView::activate(const QUrl& url) {
    if (url.scheme() != QLatin1String("tandem")) {
        QDesktopServices::openUrl(url);
        return;
    }
    const QStringList parts = url.path().split(QLatin1Char('/'));
    if (parts.size() != 2) return;
    const QString& action = parts[0];
    bool ok = false;
    const qint64 n = parts[1].toLongLong(&ok);
    if (!ok) return;
    if (action == QLatin1String("copy")) {
        if (n < 0 || n >= qint64(codeBlocks_.size())) return;
        QApplication::clipboard()->setText(codeBlocks_[size_t(n)]);
        emit codeCopied(codeBlocks_[size_t(n)]);
        return;
    }
    if (!actions_) return;
    if (action == QLatin1String("edit")) {
        for (const auto& m : messages_)
            if (m.id == n) emit editRequested(n, m.text);
    } else if (action == QLatin1String("regen")) {
        emit regenerateRequested(n);
    } else if (action == QLatin1String("prev")) {
        emit branchRequested(n, -1);
    } else if (action == QLatin1String("next")) {
        emit branchRequested(n, +1);
    }
}

}  // namespace tandem::ui
