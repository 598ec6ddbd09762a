// bench-app [--model GGUF] [--synth GGUF] [--runs N]
//
// 1. Start-up: runs the real `tandem` binary N times (offscreen, a fresh home) and reads the
//    time it prints when its window is up and the event loop runs (--print-startup).
// 2. UI stalls: the real window in this process; a 5 ms QTimer heartbeat records how late each
//    tick fires (event-loop lateness = the longest time the UI thread could not react) while
//    (a) the chat page loads --model, (b) it streams a 64-token reply, and (c) with --synth (a
//    random-weight 1B model without vocabulary, `tandem-cli synth --like llama-3.2-1b`), the
//    same load steps the worker runs (plan, map, engine on the CPU backend) on a pool thread.
#include <QApplication>
#include <QElapsedTimer>
#include <QProcess>
#include <QSettings>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "background.h"
#include "chat_page.h"
#include "fit_check.h"
#include "main_window.h"
#include "tandem/backend/backend.h"
#include "tandem/engine/engine.h"
#include "tandem/library/paths.h"

namespace {

// Lateness of a 5 ms heartbeat: the longest gap beyond 5 ms since reset().
class Heartbeat : public QObject {
  public:
    Heartbeat() {
        timer_.setTimerType(Qt::PreciseTimer);
        timer_.setInterval(5);
        connect(&timer_, &QTimer::timeout, this, [this] {
            const qint64 now = clock_.nsecsElapsed();
            if (last_ > 0) worst_ = std::max(worst_, now - last_ - 5'000'000);
            last_ = now;
            ++ticks_;
        });
        clock_.start();
        timer_.start();
    }
    void reset() {
        worst_ = 0;
        ticks_ = 0;
        last_ = clock_.nsecsElapsed();
    }
    double worstMs() const { return double(worst_) / 1e6; }
    long ticks() const { return ticks_; }

  private:
    QTimer timer_;
    QElapsedTimer clock_;
    qint64 last_ = 0, worst_ = 0;
    long ticks_ = 0;
};

// Runs the event loop until `done` is true (or `timeoutMs` passes); returns the elapsed ms.
template <class Pred>
double spinUntil(Pred done, int timeoutMs) {
    QElapsedTimer t;
    t.start();
    while (!done() && t.elapsed() < timeoutMs)
        QApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    return double(t.nsecsElapsed()) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QString model, synth;
    int runs = 5;
    const QStringList args = app.arguments();
    for (int i = 1; i + 1 < args.size(); ++i) {
        if (args[i] == "--model") model = args[i + 1];
        if (args[i] == "--synth") synth = args[i + 1];
        if (args[i] == "--runs") runs = args[i + 1].toInt();
    }
    if (model.isEmpty()) model = qEnvironmentVariable("TANDEM_DEFAULT_MODEL");
    QTemporaryDir tmp;
    QCoreApplication::setOrganizationName("TandemBench");
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, tmp.filePath("settings"));

    // 1. Start-up of the real binary.
    std::vector<double> startup;
    for (int r = 0; r < runs; ++r) {
        QProcess p;
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("QT_QPA_PLATFORM", "offscreen");
        env.insert("TANDEM_HOME", tmp.filePath(QString("home%1").arg(r)));
        env.insert("XDG_CONFIG_HOME", tmp.filePath(QString("config%1").arg(r)));
        env.insert("TANDEM_INSTANCE_KEY", QString("bench-%1-%2").arg(app.applicationPid()).arg(r));
        p.setProcessEnvironment(env);
        p.start(TANDEM_APP_BIN, {"--print-startup"});
        QByteArray out;
        spinUntil(
            [&] {
                out += p.readAllStandardOutput();
                return out.contains("ms\n") || p.state() == QProcess::NotRunning;
            },
            30000);
        const int at = out.indexOf("after ");
        if (at >= 0) startup.push_back(out.mid(at + 6).split(' ').first().toDouble());
        p.terminate();
        p.waitForFinished(10000);
    }
    std::sort(startup.begin(), startup.end());
    if (!startup.empty())
        std::printf(
            "startup to interactive window: median %.0f ms, min %.0f ms, max %.0f ms (%zu runs)\n",
            startup[startup.size() / 2], startup.front(), startup.back(), startup.size());

    // 2. UI stalls in a real window.
    tandem::ui::WindowOptions o;
    o.library = tandem::library::paths_under(tmp.filePath("lib").toStdString());
    o.http.endpoint = "http://127.0.0.1:9";
    o.node.port = 0;
    o.startServices = false;
    std::shared_ptr<tandem::store::ChatStore> store =
        tandem::store::ChatStore::open(tmp.filePath("chats.db").toStdString());
    tandem::ui::MainWindow window(store, o);
    window.show();
    Heartbeat beat;
    spinUntil([] { return false; }, 300);  // settle
    beat.reset();
    spinUntil([] { return false; }, 1000);
    std::printf("idle:                         longest UI stall %.1f ms (%ld ticks)\n",
                beat.worstMs(), beat.ticks());

    auto* chat = window.chatPage();
    if (!model.isEmpty()) {
        bool ready = false, finished = false;
        QObject::connect(chat, &tandem::ui::ChatPage::modelReady, [&] { ready = true; });
        QObject::connect(chat, &tandem::ui::ChatPage::modelFailed, [&](const QString& m) {
            std::printf("model failed: %s\n", qPrintable(m));
            ready = true;
        });
        QObject::connect(chat, &tandem::ui::ChatPage::generationFinished, [&] { finished = true; });
        beat.reset();
        chat->loadModel(model);
        const double loadMs = spinUntil([&] { return ready; }, 300000);
        std::printf("load %-25s longest UI stall %.1f ms over %.0f ms (%ld ticks)\n",
                    qPrintable(QFileInfo(model).fileName()), beat.worstMs(), loadMs, beat.ticks());
        chat->setMaxTokens(64);
        beat.reset();
        chat->send("Write a short poem about the sea, with a code block of Python that prints it.");
        const double genMs = spinUntil([&] { return finished; }, 300000);
        std::printf(
            "generate 64 tokens:           longest UI stall %.1f ms over %.0f ms (%ld ticks); %s\n",
            beat.worstMs(), genMs, beat.ticks(), qPrintable(chat->statsLabel()->text()));
    } else {
        std::printf("no --model (or TANDEM_DEFAULT_MODEL): chat load/generate not measured\n");
    }

    if (!synth.isEmpty()) {
        bool done = false;
        QString result;
        beat.reset();
        const std::string path = synth.toStdString();
        tandem::ui::runInBackground(
            &window,
            [path] {
                const auto fit =
                    tandem::ui::checkFit(path, 4096, tandem::ui::deviceBudget("cpu", 0));
                auto m = tandem::engine::load_model(path);
                tandem::engine::Engine e(m, tandem::create_backend("cpu", 0, {}));
                return fit.message;
            },
            [&](tandem::ui::Outcome<QString> r) {
                result = r.ok() ? *r.value : r.error;
                done = true;
            });
        const double ms = spinUntil([&] { return done; }, 600000);
        std::printf(
            "load 1B synth (pool thread):  longest UI stall %.1f ms over %.0f ms (%ld ticks); %s\n",
            beat.worstMs(), ms, beat.ticks(), qPrintable(result));
    }
    return 0;
}
