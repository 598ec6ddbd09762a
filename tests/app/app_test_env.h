#pragma once
// What the app's Qt Test suites share: settings in a temporary folder (never the user's), window
// options pointing at temporary folders, and the default model when present.
#include <QCoreApplication>
#include <QSettings>
#include <QString>
#include <QTemporaryDir>

#include <cstdlib>
#include <filesystem>

#include "main_window.h"
#include "tandem/library/paths.h"

namespace tandem::test {

// Call first in initTestCase: QSettings (window state, app settings) go to `dir`.
inline void isolateSettings(const QString& dir) {
    QCoreApplication::setOrganizationName(QStringLiteral("TandemTest"));
    QCoreApplication::setApplicationName(QStringLiteral("TandemTest"));
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, dir);
    QSettings().clear();
}

// The window's library, identity and peers under `home`; no services started; a hub that does
// not exist unless `hub` is given.
inline ui::WindowOptions windowOptions(const QString& home, const std::string& hub = {}) {
    ui::WindowOptions o;
    o.library = library::paths_under(home.toStdString());
    o.http.endpoint = hub.empty() ? std::string("http://127.0.0.1:9") : hub;
    o.http.connect_timeout_s = 2;
    o.node.home = home.toStdString() + "/node";
    o.node.port = 0;
    o.startServices = false;
    return o;
}

// $TANDEM_DEFAULT_MODEL when it names a file, else "".
inline QString defaultModel() {
    const QByteArray path = qgetenv("TANDEM_DEFAULT_MODEL");
    if (path.isEmpty() || !std::filesystem::exists(path.toStdString())) return {};
    return QString::fromLocal8Bit(path);
}

}  // namespace tandem::test
