#pragma once
// A `tandem-node serve` process for the app's cluster tests (QProcess): its own home, loopback
// discovery on the test's port, its state file (node id, port, live pairing code) read back,
// SIGKILL on kill() and at the end.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStringList>
#include <QThread>

#include <chrono>

namespace tandem::test {

class TestNode {
  public:
    TestNode(const QString& home, const QString& name, quint16 discoveryPort,
             const QString& modelDir)
        : home_(home), state_(home + "/state.json") {
        QDir().mkpath(home);
        const QString exe = QFileInfo(QStringLiteral(TANDEM_APP_BIN)).dir().filePath("tandem-node");
        proc_.setProcessChannelMode(QProcess::MergedChannels);
        proc_.setStandardOutputFile(home + "/node.log");
        proc_.start(exe, {"serve",
                          "--home",
                          home,
                          "--name",
                          name,
                          "--port",
                          "0",
                          "--loopback",
                          "--discovery-port",
                          QString::number(discoveryPort),
                          "--interval-ms",
                          "200",
                          "--expiry-ms",
                          "3000",
                          "--state-file",
                          state_,
                          "--threads",
                          "1",
                          "--models",
                          modelDir,
                          "--shard-cache",
                          home + "/shards"});
    }
    ~TestNode() { kill(); }
    TestNode(const TestNode&) = delete;
    TestNode& operator=(const TestNode&) = delete;

    // The state file's JSON once it has the port (waits up to `ms`).
    QJsonObject state(int ms = 20000) const {
        const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
        while (std::chrono::steady_clock::now() < end) {
            QFile f(state_);
            if (f.open(QIODevice::ReadOnly)) {
                const auto o = QJsonDocument::fromJson(f.readAll()).object();
                if (o.value("port").toInt() > 0) return o;
            }
            QThread::msleep(50);
        }
        return {};
    }
    QString nodeId() const { return state().value("node_id").toString(); }
    QString pairingCode() const { return state().value("pairing_code").toString(); }
    QString log() const {
        QFile f(home_ + "/node.log");
        return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
    }
    bool running() const { return proc_.state() != QProcess::NotRunning; }
    void kill() {
        if (proc_.state() == QProcess::NotRunning) return;
        proc_.kill();  // SIGKILL: no goodbye to the coordinator
        proc_.waitForFinished(5000);
    }

  private:
    QString home_, state_;
    QProcess proc_;
};

}  // namespace tandem::test
