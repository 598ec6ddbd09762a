#include "placeholder_page.h"

#include <QLabel>
#include <QVBoxLayout>

namespace tandem::ui {

QWidget* makePlaceholderPage(const QString& title, const QString& plan, QWidget* parent) {
    auto* page = new QWidget(parent);
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(32, 28, 32, 28);
    auto* heading = new QLabel(title, page);
    QFont f = heading->font();
    f.setPointSizeF(f.pointSizeF() * 1.6);
    f.setBold(true);
    heading->setFont(f);
    auto* body = new QLabel(plan, page);
    body->setWordWrap(true);
    body->setTextFormat(Qt::MarkdownText);
    layout->addWidget(heading);
    layout->addWidget(body);
    layout->addStretch(1);
    return page;
}

}  // namespace tandem::ui
