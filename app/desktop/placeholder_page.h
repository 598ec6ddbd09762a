#pragma once
// A page that is not built yet: its title and what it will hold, so the window is honest
// about what works today.
#include <QWidget>

namespace tandem::ui {

QWidget* makePlaceholderPage(const QString& title, const QString& plan, QWidget* parent);

}  // namespace tandem::ui
