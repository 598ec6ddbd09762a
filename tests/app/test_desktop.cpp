// Desktop integration and the Settings page: one instance per user (the real binary launched
// twice), the window's geometry remembered, and the API server toggle serving the chat's model
// over HTTP on 127.0.0.1 (the same server `tandem-cli serve` runs), answered by a real client.
#include <QCheckBox>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <future>
#include <nlohmann/json.hpp>

#include "api_server_controller.h"
#include "app_test_env.h"
#include "chat_page.h"
#include "cluster_page.h"
#include "settings_page.h"
#include "single_instance.h"
#include "tandem/library/http.h"

class TestDesktop : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir dir_;

  private slots:
    void initTestCase() { tandem::test::isolateSettings(dir_.filePath("settings")); }

    void singleInstanceAnswersALaterLaunch() {
        const QString key = QString("tandem-test-%1").arg(QCoreApplication::applicationPid());
        tandem::ui::SingleInstance first(key);
        QVERIFY(!first.askRunningInstance(200));  // nobody there: it listens now
        QSignalSpy raise(&first, &tandem::ui::SingleInstance::raiseRequested);
        // The later launch blocks on its socket, so it runs on its own thread.
        auto later = std::async(std::launch::async, [key] {
            tandem::ui::SingleInstance second(key);
            return second.askRunningInstance(3000);
        });
        QVERIFY(raise.wait(5000));
        QVERIFY(later.get());
    }

    void secondLaunchOfTheAppExits() {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("QT_QPA_PLATFORM", "offscreen");
        env.insert("TANDEM_HOME", dir_.filePath("proc-home"));
        env.insert("XDG_CONFIG_HOME", dir_.filePath("proc-config"));
        env.insert("TANDEM_INSTANCE_KEY",
                   QString("tandem-proc-%1").arg(QCoreApplication::applicationPid()));
        QProcess first;
        first.setProcessEnvironment(env);
        first.start(TANDEM_APP_BIN, {"--print-startup"});
        QVERIFY(first.waitForStarted(10000));
        QByteArray firstOut;  // QTRY re-evaluates its condition: keep what was read
        QTRY_VERIFY_WITH_TIMEOUT((firstOut += first.readAllStandardOutput()).contains("startup:") ||
                                     first.state() != QProcess::Running,
                                 20000);
        QCOMPARE(first.state(), QProcess::Running);
        QProcess second;
        second.setProcessEnvironment(env);
        second.start(TANDEM_APP_BIN, {});
        QVERIFY(second.waitForFinished(20000));
        QCOMPARE(second.exitCode(), 0);
        QVERIFY(second.readAllStandardError().contains("already running"));
        QCOMPARE(first.state(), QProcess::Running);  // the first one is still there
        first.terminate();
        QVERIFY(first.waitForFinished(10000));
        // Once it is gone, a launch runs again (a stale socket does not block it).
        QProcess third;
        third.setProcessEnvironment(env);
        third.start(TANDEM_APP_BIN, {"--print-startup"});
        QByteArray thirdOut;
        QTRY_VERIFY_WITH_TIMEOUT((thirdOut += third.readAllStandardOutput()).contains("startup:"),
                                 20000);
        third.terminate();
        QVERIFY(third.waitForFinished(10000));
    }

    void windowGeometryIsRemembered() {
        std::shared_ptr<tandem::store::ChatStore> store =
            tandem::store::ChatStore::open(dir_.filePath("geo.db").toStdString());
        {
            tandem::ui::MainWindow w(store, tandem::test::windowOptions(dir_.filePath("geo")));
            w.show();
            w.resize(913, 611);
            QTRY_COMPARE(w.size(), QSize(913, 611));
            w.close();
        }
        tandem::ui::MainWindow again(store, tandem::test::windowOptions(dir_.filePath("geo")));
        QCOMPARE(again.size(), QSize(913, 611));
    }

    void settingsAreSavedAndApplied() {
        std::shared_ptr<tandem::store::ChatStore> store =
            tandem::store::ChatStore::open(dir_.filePath("set.db").toStdString());
        tandem::ui::MainWindow w(store, tandem::test::windowOptions(dir_.filePath("set")));
        auto* s = w.settingsPage();
        s->threadsBox()->setValue(3);
        s->contextBox()->setValue(2048);
        emit s->contextBox()->editingFinished();
        QCOMPARE(w.chatPage()->runtime().threads, 3);
        QCOMPARE(w.chatPage()->runtime().contextSize, 2048);
        const auto saved = tandem::ui::AppSettings::load();
        QCOMPARE(saved.threads, 3);
        QCOMPARE(saved.contextSize, 2048);
    }

    void coordinateSwitchIsRemembered() {
        std::shared_ptr<tandem::store::ChatStore> store =
            tandem::store::ChatStore::open(dir_.filePath("coord.db").toStdString());
        {
            tandem::ui::MainWindow w(store, tandem::test::windowOptions(dir_.filePath("coord")));
            QVERIFY(!w.clusterPage()->coordinateBox()->isChecked());
            w.clusterPage()->coordinateBox()->setChecked(true);
        }
        QVERIFY(tandem::ui::AppSettings::load().coordinate);
        auto options = tandem::test::windowOptions(dir_.filePath("coord"));
        options.settings = tandem::ui::AppSettings::load();  // as the app's default options do
        tandem::ui::MainWindow again(store, options);
        QVERIFY(again.clusterPage()->coordinateBox()->isChecked());
        again.clusterPage()->coordinateBox()->setChecked(false);
        QVERIFY(!tandem::ui::AppSettings::load().coordinate);
    }

    void apiServerToggleServesTheChatModel() {
        const QString model = tandem::test::defaultModel();
        if (model.isEmpty())
            QSKIP("TANDEM_DEFAULT_MODEL is not set (packaging/fetch-default-model.sh): skipped");
        std::shared_ptr<tandem::store::ChatStore> store =
            tandem::store::ChatStore::open(dir_.filePath("api.db").toStdString());
        tandem::ui::MainWindow w(store, tandem::test::windowOptions(dir_.filePath("api")));
        QSignalSpy ready(w.chatPage(), &tandem::ui::ChatPage::modelReady);
        w.chatPage()->loadModel(model);
        QVERIFY(ready.wait(120000));

        auto* settings = w.settingsPage();
        settings->apiPortBox()->setValue(0);  // any free port
        emit settings->apiPortBox()->editingFinished();
        QSignalSpy started(w.apiServer(), &tandem::ui::ApiServerController::started);
        settings->apiServerBox()->setChecked(true);
        QVERIFY(started.wait(120000));
        const QString url = started.first().first().toString();
        QVERIFY(url.startsWith("http://127.0.0.1:"));
        QVERIFY(settings->apiStatus()->text().contains(url));

        // /v1/models names the chat's model (the file name without .gguf).
        tandem::library::HttpOptions http;
        const auto models = tandem::library::http_get(url.toStdString() + "/models", http);
        QCOMPARE(models.status, 200L);
        const auto j = nlohmann::json::parse(models.body);
        QCOMPARE(QString::fromStdString(j["data"][0]["id"].get<std::string>()),
                 QFileInfo(model).completeBaseName());

        // A chat completion from a plain HTTP client, as an editor plug-in would send it.
        QNetworkAccessManager net;
        QNetworkRequest req(QUrl(url + "/chat/completions"));
        req.setHeader(QNetworkRequest::ContentTypeHeader, "application/json");
        const nlohmann::json body = {{"model", QFileInfo(model).completeBaseName().toStdString()},
                                     {"messages", {{{"role", "user"}, {"content", "Say hi."}}}},
                                     {"max_tokens", 5}};
        QNetworkReply* reply = net.post(req, QByteArray::fromStdString(body.dump()));
        QSignalSpy done(reply, &QNetworkReply::finished);
        QVERIFY(done.wait(120000));
        QCOMPARE(reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt(), 200);
        const auto answer = nlohmann::json::parse(reply->readAll().toStdString());
        QCOMPARE(answer["object"].get<std::string>(), std::string("chat.completion"));
        QVERIFY(answer["usage"]["completion_tokens"].get<int>() <= 5);
        QVERIFY(answer["usage"]["prompt_tokens"].get<int>() > 0);
        reply->deleteLater();

        // Off: the port no longer answers.
        QSignalSpy stopped(w.apiServer(), &tandem::ui::ApiServerController::stopped);
        settings->apiServerBox()->setChecked(false);
        QVERIFY(stopped.wait(30000));
        QVERIFY_THROWS_EXCEPTION(std::exception,
                                 tandem::library::http_get(url.toStdString() + "/models", http));
    }
};

QTEST_MAIN(TestDesktop)
#include "test_desktop.moc"
