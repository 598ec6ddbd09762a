// tandem: the desktop app. `tandem --model PATH` opens with that model loaded.
#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QTimer>

#include "chat_page.h"
#include "main_window.h"
#include "tandem/store/chat_store.h"

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName("Tandem");
    QApplication::setOrganizationName("Tandem");
    QApplication::setDesktopFileName("io.github.tandem.Tandem");

    QCommandLineParser parser;
    parser.setApplicationDescription("Run language models on this machine or a cluster");
    parser.addHelpOption();
    QCommandLineOption modelOpt("model", "GGUF model to load at start", "path");
    QCommandLineOption dbOpt("chats-db", "conversation database (default: the user's)", "path");
    QCommandLineOption threadsOpt("threads", "CPU threads (0: physical cores)", "n", "0");
    // For docs/screenshots: show a page, optionally answer a prompt, save the window, quit.
    QCommandLineOption shotOpt("screenshot", "save the window to FILE and quit", "file");
    QCommandLineOption pageOpt("page", "page to show: chat, models, cluster, settings", "name",
                               "chat");
    QCommandLineOption promptOpt("prompt", "send this message first (with --model)", "text");
    parser.addOptions({modelOpt, dbOpt, threadsOpt, shotOpt, pageOpt, promptOpt});
    parser.process(app);

    std::shared_ptr<tandem::store::ChatStore> store;
    try {
        const std::filesystem::path db =
            parser.isSet(dbOpt) ? std::filesystem::path(parser.value(dbOpt).toStdString())
                                : tandem::store::ChatStore::default_path();
        std::filesystem::create_directories(db.parent_path());
        store = tandem::store::ChatStore::open(db);
        // No generation of this process runs yet: replies left streaming by a crash end here.
        store->recover_interrupted();
    } catch (const std::exception& e) {
        QMessageBox::critical(nullptr, "Tandem",
                              QString("The conversation database cannot be opened:\n%1")
                                  .arg(QString::fromUtf8(e.what())));
        return 1;
    }

    tandem::ui::MainWindow window(store);
    window.show();
    if (parser.isSet(modelOpt))
        window.chatPage()->loadModel(parser.value(modelOpt), parser.value(threadsOpt).toInt());
    if (parser.isSet(shotOpt)) {
        const QStringList pages = {"chat", "models", "cluster", "settings"};
        window.showPage(static_cast<tandem::ui::MainWindow::Page>(
            std::max<qsizetype>(0, pages.indexOf(parser.value(pageOpt)))));
        const QString file = parser.value(shotOpt);
        auto* chat = window.chatPage();
        auto save = [&window, file] {
            window.chatPage()->messageView()->renderNow();
            const bool ok = window.grab().save(file);
            QApplication::exit(ok ? 0 : 1);
        };
        if (parser.isSet(promptOpt) && parser.isSet(modelOpt)) {
            QObject::connect(chat, &tandem::ui::ChatPage::modelReady, chat,
                             [chat, &parser, &promptOpt] { chat->send(parser.value(promptOpt)); });
            QObject::connect(chat, &tandem::ui::ChatPage::generationFinished, chat,
                             [save](qint64, const QString&) { QTimer::singleShot(200, save); });
        } else {
            QTimer::singleShot(800, save);
        }
    }
    return app.exec();
}
