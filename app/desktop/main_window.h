#pragma once
// The window: a sidebar (Chats, Models, Cluster, Settings) switching a stack of pages, and the
// services the pages share (node service, API server). Window geometry and state are
// remembered between runs (QSettings).
#include <QListWidget>
#include <QMainWindow>
#include <QStackedWidget>

#include <memory>

#include "app_settings.h"
#include "generation_worker.h"
#include "tandem/library/http.h"
#include "tandem/library/paths.h"
#include "tandem/net/node_service.h"
#include "tandem/store/chat_store.h"

namespace tandem::ui {

class ApiServerController;
class ChatPage;
class ClusterPage;
class ModelsPage;
class NodeController;
class SettingsPage;

// Where the window's pages keep and fetch things; tests point them at temporary folders and a
// local hub.
struct WindowOptions {
    library::LibraryPaths library;
    library::HttpOptions http;
    net::NodeConfig node;
    AppSettings settings;
    // Turn on the services the settings ask for (node service, API server) at start.
    bool startServices = true;
    // The user's own folders and settings, with HF_ENDPOINT / HF_TOKEN applied.
    static WindowOptions defaults();
};

class MainWindow : public QMainWindow {
    Q_OBJECT
  public:
    enum Page { Chats = 0, Models, Cluster, Settings };

    MainWindow(std::shared_ptr<store::ChatStore> store, WindowOptions options,
               QWidget* parent = nullptr);
    explicit MainWindow(std::shared_ptr<store::ChatStore> store, QWidget* parent = nullptr)
        : MainWindow(std::move(store), WindowOptions::defaults(), parent) {}
    ~MainWindow() override;

    ChatPage* chatPage() { return chat_; }
    ModelsPage* modelsPage() { return models_; }
    ClusterPage* clusterPage() { return cluster_; }
    SettingsPage* settingsPage() { return settings_; }
    NodeController* node() { return node_; }
    ApiServerController* apiServer() { return api_; }
    void showPage(Page page);
    Page currentPage() const { return static_cast<Page>(stack_->currentIndex()); }
    // Brings the window to the front (a second launch asked for it).
    void raiseWindow();

  protected:
    void closeEvent(QCloseEvent* event) override;

  private:
    void applySettings(const AppSettings& s);
    void startApi();
    // The chat's runtime: the settings plus the nodes this machine coordinates.
    RuntimeChoice chatRuntime() const;

    WindowOptions options_;
    QListWidget* sidebar_ = nullptr;
    QStackedWidget* stack_ = nullptr;
    ChatPage* chat_ = nullptr;
    ModelsPage* models_ = nullptr;
    ClusterPage* cluster_ = nullptr;
    SettingsPage* settings_ = nullptr;
    NodeController* node_ = nullptr;
    ApiServerController* api_ = nullptr;
    QString modelPath_;
    QStringList clusterNodes_;  // coordinated by this machine (Cluster page); empty: local
};

}  // namespace tandem::ui
