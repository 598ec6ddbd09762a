#include "app_settings.h"

#include <QSettings>

namespace tandem::ui {

AppSettings AppSettings::load() {
    QSettings s;
    AppSettings a;
    a.backend = s.value(QStringLiteral("runtime/backend"), a.backend).toString();
    a.device = s.value(QStringLiteral("runtime/device"), a.device).toInt();
    a.threads = s.value(QStringLiteral("runtime/threads"), a.threads).toInt();
    a.contextSize = s.value(QStringLiteral("runtime/context"), a.contextSize).toInt();
    a.modelFolder = s.value(QStringLiteral("library/folder"), a.modelFolder).toString();
    a.nodeService = s.value(QStringLiteral("services/node"), a.nodeService).toBool();
    a.apiServer = s.value(QStringLiteral("services/api"), a.apiServer).toBool();
    a.apiPort = s.value(QStringLiteral("services/apiPort"), a.apiPort).toInt();
    a.lastModel = s.value(QStringLiteral("library/lastModel"), a.lastModel).toString();
    a.coordinate = s.value(QStringLiteral("cluster/coordinate"), a.coordinate).toBool();
    return a;
}

void AppSettings::save() const {
    QSettings s;
    s.setValue(QStringLiteral("runtime/backend"), backend);
    s.setValue(QStringLiteral("runtime/device"), device);
    s.setValue(QStringLiteral("runtime/threads"), threads);
    s.setValue(QStringLiteral("runtime/context"), contextSize);
    s.setValue(QStringLiteral("library/folder"), modelFolder);
    s.setValue(QStringLiteral("services/node"), nodeService);
    s.setValue(QStringLiteral("services/api"), apiServer);
    s.setValue(QStringLiteral("services/apiPort"), apiPort);
}

void AppSettings::saveLastModel(const QString& path) {
    QSettings().setValue(QStringLiteral("library/lastModel"), path);
}

void AppSettings::saveCoordinate(bool on) {
    QSettings().setValue(QStringLiteral("cluster/coordinate"), on);
}

}  // namespace tandem::ui
