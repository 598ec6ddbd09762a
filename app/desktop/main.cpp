// tandem: the desktop app. `tandem --model PATH` opens with that model loaded.
#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QFile>
#include <QMessageBox>
#include <QTimer>

#include <cstdio>

#include "chat_page.h"
#include "cluster_page.h"
#include "main_window.h"
#include "models_page.h"
#include "single_instance.h"
#include "tandem/store/chat_store.h"

namespace {

// Options for docs/screenshots: show a page in a given state, save the window, quit.
struct Screenshot {
    QString file, page = "chat", prompt, download, search, repo, importDir;
    int delayMs = 800;
    bool coordinate = false;  // the prompt waits until the model runs on the cluster
};

void scheduleScreenshot(tandem::ui::MainWindow& window, const Screenshot& shot, bool haveModel) {
    using tandem::ui::MainWindow;
    const QStringList pages = {"chat", "models", "cluster", "settings"};
    window.showPage(
        static_cast<MainWindow::Page>(std::max<qsizetype>(0, pages.indexOf(shot.page))));
    auto save = [&window, file = shot.file] {
        window.chatPage()->messageView()->renderNow();
        const bool ok = window.grab().save(file);
        std::fprintf(stderr, "screenshot: %s %s\n", qPrintable(file), ok ? "saved" : "FAILED");
        QApplication::exit(ok ? 0 : 1);
    };
    auto* chat = window.chatPage();
    auto* models = window.modelsPage();
    if (!shot.importDir.isEmpty()) models->importFolder(shot.importDir);
    if (!shot.search.isEmpty()) {
        models->searchBox()->setText(shot.search);
        models->hubResults()->search(shot.search);
    }
    if (!shot.repo.isEmpty()) models->showRepo(shot.repo);
    if (!shot.download.isEmpty()) {
        const QString repo = shot.download.section(':', 0, 0),
                      quant = shot.download.section(':', 1);
        models->downloads()->enqueue(repo, quant);
        // Saved once the transfer is under way (some bytes in, not finished).
        QObject::connect(models->downloads(), &tandem::ui::DownloadQueue::jobChanged, &window,
                         [models, save, delay = shot.delayMs](int row) {
                             const auto* j = models->downloads()->jobAt(row);
                             static bool once = false;
                             if (!once && j && j->total && j->done > j->total / 5) {
                                 once = true;
                                 QTimer::singleShot(delay, save);
                             }
                         });
        return;
    }
    if (!shot.prompt.isEmpty() && haveModel && shot.coordinate) {
        // The model loads here first, then again over the paired nodes once they are in sight:
        // ask only then, with a short reply, so the Cluster page shows the run's live health.
        chat->setMaxTokens(48);
        QObject::connect(chat, &tandem::ui::ChatPage::clusterStatus, chat,
                         [chat, prompt = shot.prompt](const tandem::ui::ClusterStatus& s) {
                             static bool sent = false;
                             if (sent || !s.active) return;
                             sent = true;
                             chat->send(prompt);
                         });
        QObject::connect(chat, &tandem::ui::ChatPage::generationFinished, chat,
                         [save](qint64, const QString&) { QTimer::singleShot(300, save); });
        return;
    }
    if (!shot.prompt.isEmpty() && haveModel) {
        // A short reply: the whole exchange (question and answer) fits the window.
        chat->setMaxTokens(64);
        QObject::connect(chat, &tandem::ui::ChatPage::modelReady, chat,
                         [chat, prompt = shot.prompt] { chat->send(prompt); });
        QObject::connect(chat, &tandem::ui::ChatPage::generationFinished, chat,
                         [save](qint64, const QString&) { QTimer::singleShot(300, save); });
        return;
    }
    QTimer::singleShot(shot.delayMs, save);
}

}  // namespace

int main(int argc, char** argv) {
    QElapsedTimer sinceStart;
    sinceStart.start();
    QApplication app(argc, argv);
    QApplication::setApplicationName("Tandem");
    QApplication::setOrganizationName("Tandem");
    QApplication::setDesktopFileName("io.github.tandem.Tandem");

    QCommandLineParser parser;
    parser.setApplicationDescription("Run language models on this machine or a cluster");
    parser.addHelpOption();
    QCommandLineOption modelOpt("model", "GGUF model to load at start", "path");
    QCommandLineOption dbOpt("chats-db", "conversation database (default: the user's)", "path");
    QCommandLineOption homeOpt("home",
                               "folder for the library, identity and peers "
                               "(default: $TANDEM_HOME or ~/.local/share/tandem)",
                               "dir");
    QCommandLineOption threadsOpt("threads", "CPU threads (0: physical cores)", "n");
    QCommandLineOption nodeNameOpt("node-name", "this machine's name for other nodes", "name");
    QCommandLineOption nodeOpt("node-service", "turn the node service on");
    QCommandLineOption loopbackOpt("loopback", "discover nodes over loopback (single-host demos)");
    QCommandLineOption coordinateOpt(
        "coordinate", "run the chat's model on this machine + the paired nodes in sight");
    QCommandLineOption discoveryPortOpt("discovery-port", "UDP port of discovery beacons", "port");
    QCommandLineOption newInstanceOpt("new-instance", "run even when Tandem is already running");
    QCommandLineOption startupOpt("print-startup", "print the time to an interactive window");
    QCommandLineOption shotOpt("screenshot", "save the window to FILE and quit", "file");
    QCommandLineOption pageOpt("page", "page to show: chat, models, cluster, settings", "name",
                               "chat");
    QCommandLineOption promptOpt("prompt", "send this message first (with --model)", "text");
    QCommandLineOption downloadOpt("download", "start pulling REPO[:QUANT] (screenshots)", "spec");
    QCommandLineOption searchOpt("search", "search the hub for TEXT (screenshots)", "text");
    QCommandLineOption repoOpt("repo", "show the files of REPO (screenshots)", "repo");
    QCommandLineOption importOpt("import", "import the GGUF files under DIR (screenshots)", "dir");
    QCommandLineOption delayOpt("shot-delay", "milliseconds before the screenshot", "ms", "800");
    parser.addOptions({modelOpt, dbOpt, homeOpt, threadsOpt, nodeNameOpt, nodeOpt, loopbackOpt,
                       coordinateOpt, discoveryPortOpt, newInstanceOpt, startupOpt, shotOpt,
                       pageOpt, promptOpt, downloadOpt, searchOpt, repoOpt, importOpt, delayOpt});
    parser.process(app);

    // One window per user: a second launch raises the first and exits.
    const QByteArray instanceKey = qgetenv("TANDEM_INSTANCE_KEY");  // tests use their own
    tandem::ui::SingleInstance single(instanceKey.isEmpty()
                                          ? QStringLiteral("io.github.tandem.Tandem")
                                          : QString::fromLocal8Bit(instanceKey));
    const bool separate = parser.isSet(newInstanceOpt) || parser.isSet(shotOpt);
    if (!separate && single.askRunningInstance()) {
        std::fprintf(stderr, "tandem: already running; raised its window\n");
        return 0;
    }

    if (parser.isSet(homeOpt)) qputenv("TANDEM_HOME", parser.value(homeOpt).toLocal8Bit());
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

    auto options = tandem::ui::WindowOptions::defaults();
    if (parser.isSet(threadsOpt)) options.settings.threads = parser.value(threadsOpt).toInt();
    if (parser.isSet(nodeOpt)) options.settings.nodeService = true;
    if (parser.isSet(nodeNameOpt)) options.node.name = parser.value(nodeNameOpt).toStdString();
    options.node.discovery.loopback = parser.isSet(loopbackOpt);
    if (parser.isSet(discoveryPortOpt))
        options.node.discovery.port =
            static_cast<uint16_t>(parser.value(discoveryPortOpt).toUInt());
    if (parser.isSet(shotOpt)) {
        options.node.port = 0;  // never collide with a node service already running
        options.settings.apiServer = false;
    }

    tandem::ui::MainWindow window(store, options);
    QObject::connect(&single, &tandem::ui::SingleInstance::raiseRequested, &window,
                     &tandem::ui::MainWindow::raiseWindow);
    window.show();
    if (parser.isSet(startupOpt))
        QTimer::singleShot(0, &window, [&sinceStart] {
            std::printf("startup: interactive window after %lld ms\n",
                        static_cast<long long>(sinceStart.elapsed()));
            std::fflush(stdout);
        });
    // Before the model loads, so it loads once here and then moves onto the nodes as they appear.
    if (parser.isSet(coordinateOpt)) window.clusterPage()->coordinateBox()->setChecked(true);
    QString model = parser.value(modelOpt);
    if (model.isEmpty() && !parser.isSet(shotOpt) && QFile::exists(options.settings.lastModel))
        model = options.settings.lastModel;
    if (!model.isEmpty()) window.chatPage()->loadModel(model);
    if (parser.isSet(shotOpt)) {
        Screenshot shot;
        shot.file = parser.value(shotOpt);
        shot.page = parser.value(pageOpt);
        shot.prompt = parser.value(promptOpt);
        shot.download = parser.value(downloadOpt);
        shot.search = parser.value(searchOpt);
        shot.repo = parser.value(repoOpt);
        shot.importDir = parser.value(importOpt);
        shot.delayMs = parser.value(delayOpt).toInt();
        shot.coordinate = parser.isSet(coordinateOpt);
        scheduleScreenshot(window, shot, !model.isEmpty());
    }
    return app.exec();
}
