#pragma once
// The app's settings (QSettings under "Tandem/Tandem"): what the Settings page edits and what
// the chat, models and cluster pages read when they load a model or start a service.
#include <QString>

namespace tandem::ui {

struct AppSettings {
    QString backend = QStringLiteral("cpu");  // "cpu", "vulkan", "hip"
    int device = 0;                           // index within the backend
    int threads = 0;                          // 0: all physical cores
    int contextSize = 4096;                   // default context of a loaded model
    QString modelFolder;                      // "" : the library's default folder
    bool nodeService = false;                 // run the node service (discovery, pairing)
    bool apiServer = false;                   // serve the OpenAI-compatible API
    int apiPort = 8080;                       // on 127.0.0.1
    QString lastModel;                        // the model picked last (loaded at start)
    bool coordinate = false;                  // run the chat's model over the paired nodes

    static AppSettings load();
    // Everything but lastModel and coordinate, which their own savers write when they change.
    void save() const;
    static void saveLastModel(const QString& path);
    // The Cluster page's Coordinate switch, written when it is toggled.
    static void saveCoordinate(bool on);
};

}  // namespace tandem::ui
