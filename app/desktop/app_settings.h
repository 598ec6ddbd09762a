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

    static AppSettings load();
    // Everything but lastModel, which saveLastModel writes when a model is picked.
    void save() const;
    static void saveLastModel(const QString& path);
};

}  // namespace tandem::ui
