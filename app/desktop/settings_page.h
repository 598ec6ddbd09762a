#pragma once
// The Settings page: backend and device, CPU threads, default context, model folder, the node
// service switch and the local API server switch (with its port and address). Every change is
// saved (QSettings) and announced with `changed`; the window applies it.
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QWidget>

#include "app_settings.h"

namespace tandem::ui {

class SettingsPage : public QWidget {
    Q_OBJECT
  public:
    explicit SettingsPage(AppSettings settings, QWidget* parent = nullptr);

    const AppSettings& settings() const { return settings_; }
    QComboBox* backendBox() { return backend_; }
    QComboBox* deviceBox() { return device_; }
    QSpinBox* threadsBox() { return threads_; }
    QSpinBox* contextBox() { return context_; }
    QLineEdit* folderEdit() { return folder_; }
    QCheckBox* nodeServiceBox() { return node_; }
    QCheckBox* apiServerBox() { return api_; }
    QSpinBox* apiPortBox() { return apiPort_; }
    QLabel* apiStatus() { return apiStatus_; }

  public slots:
    // What the API server is doing now ("Listening on http://127.0.0.1:8080/v1", an error).
    void setApiStatus(const QString& text);
    void setNodeStatus(const QString& text);
    void setNodeServiceOn(bool on);

  signals:
    void changed(const tandem::ui::AppSettings& settings);
    void apiServerToggled(bool on);
    void nodeServiceToggled(bool on);
    void importFolderRequested(const QString& folder);

  private:
    void commit();
    void loadBackends();

    AppSettings settings_;
    QComboBox* backend_ = nullptr;
    QComboBox* device_ = nullptr;
    QSpinBox* threads_ = nullptr;
    QSpinBox* context_ = nullptr;
    QLineEdit* folder_ = nullptr;
    QCheckBox* node_ = nullptr;
    QLabel* nodeStatus_ = nullptr;
    QCheckBox* api_ = nullptr;
    QSpinBox* apiPort_ = nullptr;
    QLabel* apiStatus_ = nullptr;
    struct Backend {
        QString name;
        QStringList devices;
        QString reason;  // why not available
    };
    std::vector<Backend> backends_;
};

}  // namespace tandem::ui
