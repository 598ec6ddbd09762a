// tandem: the desktop app. `tandem --model PATH` opens with that model loaded.
#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>

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
    parser.addOptions({modelOpt, dbOpt, threadsOpt});
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
    return app.exec();
}
