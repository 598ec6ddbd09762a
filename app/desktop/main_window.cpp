#include "main_window.h"

#include <QCheckBox>
#include <QCloseEvent>
#include <QHBoxLayout>
#include <QSettings>

#include "api_server_controller.h"
#include "chat_page.h"
#include "cluster_page.h"
#include "models_page.h"
#include "node_controller.h"
#include "settings_page.h"
#include "tandem/net/identity.h"
#include "tandem/version.h"

namespace tandem::ui {

namespace {

RuntimeChoice runtimeOf(const AppSettings& s) {
    RuntimeChoice r;
    r.backend = s.backend;
    r.device = s.device;
    r.threads = s.threads;
    r.contextSize = s.contextSize;
    return r;
}

}  // namespace

WindowOptions WindowOptions::defaults() {
    WindowOptions o;
    o.settings = AppSettings::load();
    o.library = library::default_paths();
    if (!o.settings.modelFolder.isEmpty())
        o.library.models_dir = o.settings.modelFolder.toStdString();
    o.http = library::HttpOptions::from_env();
    return o;
}

MainWindow::MainWindow(std::shared_ptr<store::ChatStore> store, WindowOptions options,
                       QWidget* parent)
    : QMainWindow(parent), options_(std::move(options)) {
    qRegisterMetaType<tandem::net::NodeConfig>();
    setWindowTitle(QStringLiteral("Tandem %1").arg(QString::fromUtf8(tandem::version())));
    auto* central = new QWidget(this);
    auto* layout = new QHBoxLayout(central);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);

    sidebar_ = new QListWidget(central);
    sidebar_->setFixedWidth(140);
    sidebar_->setFrameShape(QFrame::NoFrame);
    sidebar_->setStyleSheet(QStringLiteral(
        "QListWidget { background: palette(window); padding-top: 10px; }"
        "QListWidget::item { padding: 10px 14px; border-radius: 6px; margin: 2px 6px; }"
        "QListWidget::item:selected { background: palette(highlight);"
        " color: palette(highlighted-text); }"));
    for (const QString& name : {tr("Chats"), tr("Models"), tr("Cluster"), tr("Settings")})
        sidebar_->addItem(name);

    node_ = new NodeController(this);
    api_ = new ApiServerController(this);
    stack_ = new QStackedWidget(central);
    chat_ = new ChatPage(std::move(store), stack_);
    models_ = new ModelsPage(options_.library, options_.http, stack_);
    cluster_ = new ClusterPage(node_, stack_);
    settings_ = new SettingsPage(options_.settings, stack_);
    stack_->addWidget(chat_);
    stack_->addWidget(models_);
    stack_->addWidget(cluster_);
    stack_->addWidget(settings_);
    layout->addWidget(sidebar_);
    layout->addWidget(stack_, 1);
    setCentralWidget(central);

    connect(sidebar_, &QListWidget::currentRowChanged, stack_, &QStackedWidget::setCurrentIndex);
    sidebar_->setCurrentRow(Chats);

    // Models -> chat: the library feeds the picker; "Use in chat" loads the model.
    connect(models_->library(), &LibraryModel::refreshed, this,
            [this] { chat_->setModelChoices(models_->library()->choices()); });
    connect(models_, &ModelsPage::useModel, this, [this](const QString& path) {
        chat_->loadModel(path);
        showPage(Chats);
    });
    connect(chat_, &ChatPage::modelPicked, this, [this](const QString& path) {
        modelPath_ = path;
        AppSettings::saveLastModel(path);
        cluster_->setModel(path, settings_->settings().contextSize);
        if (settings_->settings().apiServer) startApi();  // the API follows the chat's model
    });

    // Cluster <-> chat: coordinating runs the chat's model over the paired nodes (reloaded on
    // change); the chat's worker reports the run's shares and timings back to the page.
    connect(cluster_, &ClusterPage::coordinationChanged, this,
            [this](const QStringList& nodes, bool reload) {
                clusterNodes_ = nodes;
                chat_->setRuntime(chatRuntime());
                if (reload && !modelPath_.isEmpty()) chat_->loadModel(modelPath_);
            });
    connect(chat_, &ChatPage::clusterStatus, cluster_, &ClusterPage::setClusterStatus);

    // Settings -> everyone.
    connect(settings_, &SettingsPage::changed, this, &MainWindow::applySettings);
    connect(settings_, &SettingsPage::importFolderRequested, models_, &ModelsPage::importFolder);
    connect(settings_, &SettingsPage::nodeServiceToggled, this, [this](bool on) {
        if (on) {
            settings_->setNodeStatus(tr("starting…"));
            node_->start(options_.node);
        } else {
            node_->stop();
        }
    });
    connect(cluster_, &ClusterPage::nodeServiceWanted, this,
            [this] { settings_->setNodeServiceOn(true); });
    connect(node_, &NodeController::started, this,
            [this] { settings_->setNodeStatus(tr("on, port %1").arg(node_->service()->port())); });
    connect(node_, &NodeController::stopped, this, [this] { settings_->setNodeStatus(tr("off")); });
    connect(node_, &NodeController::failed, this,
            [this](const QString& m) { settings_->setNodeStatus(tr("failed: %1").arg(m)); });
    connect(settings_, &SettingsPage::apiServerToggled, this, [this](bool on) {
        if (on)
            startApi();
        else
            api_->stop();
    });
    connect(api_, &ApiServerController::started, this, [this](const QString& url) {
        settings_->setApiStatus(tr("Listening on %1 (model \"%2\")").arg(url, api_->modelId()));
    });
    connect(api_, &ApiServerController::stopped, this,
            [this] { settings_->setApiStatus(tr("Off")); });
    connect(api_, &ApiServerController::failed, this,
            [this](const QString& m) { settings_->setApiStatus(tr("Not running: %1").arg(m)); });

    applySettings(options_.settings);
    // The Coordinate switch comes back as it was left; it acts once paired nodes are in sight.
    cluster_->coordinateBox()->setChecked(options_.settings.coordinate);
    connect(cluster_->coordinateBox(), &QCheckBox::toggled, this,
            [](bool on) { AppSettings::saveCoordinate(on); });
    if (options_.startServices) {
        if (options_.settings.nodeService) node_->start(options_.node);
    }

    QSettings settings;
    if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray()))
        resize(1200, 780);
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
}

MainWindow::~MainWindow() = default;

RuntimeChoice MainWindow::chatRuntime() const {
    RuntimeChoice r = runtimeOf(settings_->settings());
    r.clusterNodes = clusterNodes_;
    if (!clusterNodes_.isEmpty()) {
        const auto service = node_->service();
        const std::filesystem::path home = service && !service->config().home.empty()
                                               ? service->config().home
                                               : net::default_home();
        r.clusterHome = QString::fromStdString(home.string());
    }
    return r;
}

void MainWindow::applySettings(const AppSettings& s) {
    RuntimeChoice r = runtimeOf(s);
    r.clusterNodes = clusterNodes_;
    if (!clusterNodes_.isEmpty()) r.clusterHome = chatRuntime().clusterHome;
    chat_->setRuntime(r);
    models_->library()->setRuntime(s.backend, s.device, s.contextSize);
    if (!modelPath_.isEmpty()) cluster_->setModel(modelPath_, s.contextSize);
}

void MainWindow::startApi() {
    settings_->setApiStatus(tr("Starting…"));
    const AppSettings& s = settings_->settings();
    api_->start(modelPath_, quint16(s.apiPort), runtimeOf(s));
}

void MainWindow::showPage(Page page) {
    sidebar_->setCurrentRow(page);
}

void MainWindow::raiseWindow() {
    if (isMinimized()) showNormal();
    show();
    raise();
    activateWindow();
}

void MainWindow::closeEvent(QCloseEvent* event) {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    QMainWindow::closeEvent(event);
}

}  // namespace tandem::ui
