#include "single_instance.h"

#include <QLocalSocket>

#include <unistd.h>

namespace tandem::ui {

SingleInstance::SingleInstance(const QString& key, QObject* parent)
    : QObject(parent), name_(QStringLiteral("%1-%2").arg(key).arg(::getuid())) {
    connect(&server_, &QLocalServer::newConnection, this, [this] {
        while (QLocalSocket* s = server_.nextPendingConnection()) {
            connect(s, &QLocalSocket::readyRead, this, [this, s] {
                if (s->readAll().startsWith("raise")) emit raiseRequested();
                s->write("ok\n");
                s->flush();
                s->disconnectFromServer();
            });
            connect(s, &QLocalSocket::disconnected, s, &QObject::deleteLater);
        }
    });
}

bool SingleInstance::askRunningInstance(int timeoutMs) {
    QLocalSocket probe;
    probe.connectToServer(name_);
    if (probe.waitForConnected(timeoutMs)) {
        probe.write("raise\n");
        probe.flush();
        // The answer says the other instance really handled it (not a dying process).
        if (probe.waitForReadyRead(timeoutMs) && probe.readAll().startsWith("ok")) return true;
    }
    // Nobody answered: a socket file left by a crash is stale; take the name over.
    QLocalServer::removeServer(name_);
    server_.setSocketOptions(QLocalServer::UserAccessOption);
    server_.listen(name_);
    return false;
}

}  // namespace tandem::ui
