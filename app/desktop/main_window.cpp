#include "main_window.h"

#include <QLabel>

#include "tandem/version.h"

namespace tandem::ui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("Tandem %1").arg(QString::fromUtf8(tandem::version())));
    setCentralWidget(new QLabel(tr("Tandem"), this));
    resize(1100, 720);
}

}  // namespace tandem::ui
