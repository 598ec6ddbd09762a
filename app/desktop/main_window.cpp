#include "main_window.h"

#include <QCloseEvent>
#include <QHBoxLayout>
#include <QSettings>

#include "chat_page.h"
#include "placeholder_page.h"
#include "tandem/version.h"

namespace tandem::ui {

MainWindow::MainWindow(std::shared_ptr<store::ChatStore> store, QWidget* parent)
    : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("Tandem %1").arg(QString::fromUtf8(tandem::version())));
    auto* central = new QWidget(this);
    auto* layout = new QHBoxLayout(central);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);

    sidebar_ = new QListWidget(central);
    sidebar_->setFixedWidth(140);
    sidebar_->setFrameShape(QFrame::NoFrame);
    sidebar_->setStyleSheet(QStringLiteral(
        "QListWidget { background: palette(window); padding-top: 10px; }"
        "QListWidget::item { padding: 10px 14px; border-radius: 6px; margin: 2px 6px; }"
        "QListWidget::item:selected { background: palette(highlight);"
        " color: palette(highlighted-text); }"));
    for (const QString& name : {tr("Chats"), tr("Models"), tr("Cluster"), tr("Settings")})
        sidebar_->addItem(name);

    stack_ = new QStackedWidget(central);
    chat_ = new ChatPage(std::move(store), stack_);
    stack_->addWidget(chat_);
    stack_->addWidget(makePlaceholderPage(
        tr("Models"),
        tr("Coming next: the local library (size, quantization, whether it fits this machine), "
           "Hugging Face search with a file list and quant picker, a download queue with "
           "pause/resume/cancel, quantize and delete.\n\nFor now start the app with "
           "`tandem --model PATH` or use `tandem-cli pull`."),
        stack_));
    stack_->addWidget(makePlaceholderPage(
        tr("Cluster"),
        tr("Coming next: discovered peers (name, backend, device, free memory, link, latency), "
           "the join wizard with pairing code and QR, the planned split per node and live "
           "health.\n\nFor now use `tandem-node` and `tandem-cli` to pair and run a cluster."),
        stack_));
    stack_->addWidget(makePlaceholderPage(
        tr("Settings"),
        tr("Coming next: backend and device, threads, default context, model folder and the "
           "node service switch."),
        stack_));
    layout->addWidget(sidebar_);
    layout->addWidget(stack_, 1);
    setCentralWidget(central);

    connect(sidebar_, &QListWidget::currentRowChanged, stack_, &QStackedWidget::setCurrentIndex);
    sidebar_->setCurrentRow(Chats);

    QSettings settings;
    if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray()))
        resize(1200, 780);
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
}

void MainWindow::showPage(Page page) {
    sidebar_->setCurrentRow(page);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    QMainWindow::closeEvent(event);
}

}  // namespace tandem::ui
