#include "settings_page.h"

#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QVBoxLayout>

#include "background.h"
#include "tandem/backend/registry.h"
#include "tandem/common/sysinfo.h"
#include "tandem/library/format.h"

namespace tandem::ui {

SettingsPage::SettingsPage(AppSettings settings, QWidget* parent)
    : QWidget(parent), settings_(std::move(settings)) {
    auto* runtimeBox = new QGroupBox(tr("Running models"), this);
    backend_ = new QComboBox(runtimeBox);
    backend_->addItem(settings_.backend, settings_.backend);  // until the list is in
    device_ = new QComboBox(runtimeBox);
    device_->addItem(tr("device %1").arg(settings_.device), settings_.device);
    threads_ = new QSpinBox(runtimeBox);
    threads_->setRange(0, 1024);
    threads_->setSpecialValueText(tr("all physical cores"));
    threads_->setValue(settings_.threads);
    context_ = new QSpinBox(runtimeBox);
    context_->setRange(256, 1 << 20);
    context_->setSingleStep(1024);
    context_->setValue(settings_.contextSize);
    context_->setSuffix(tr(" tokens"));
    auto* runtimeForm = new QFormLayout(runtimeBox);
    runtimeForm->addRow(tr("Backend"), backend_);
    runtimeForm->addRow(tr("Device"), device_);
    runtimeForm->addRow(tr("CPU threads"), threads_);
    runtimeForm->addRow(tr("Default context"), context_);

    auto* libraryBox = new QGroupBox(tr("Models"), this);
    folder_ = new QLineEdit(settings_.modelFolder, libraryBox);
    folder_->setPlaceholderText(tr("the library's folder"));
    auto* browse = new QPushButton(tr("Browse…"), libraryBox);
    auto* import = new QPushButton(tr("Import GGUF files from it"), libraryBox);
    auto* folderRow = new QHBoxLayout;
    folderRow->addWidget(folder_, 1);
    folderRow->addWidget(browse);
    auto* libraryForm = new QFormLayout(libraryBox);
    libraryForm->addRow(tr("Model folder"), folderRow);
    libraryForm->addRow(QString(), import);

    auto* servicesBox = new QGroupBox(tr("Services"), this);
    node_ = new QCheckBox(tr("Node service: find other machines and let them find this one"),
                          servicesBox);
    node_->setChecked(settings_.nodeService);
    nodeStatus_ = new QLabel(servicesBox);
    api_ =
        new QCheckBox(tr("Local API server (OpenAI-compatible, this machine only)"), servicesBox);
    api_->setChecked(settings_.apiServer);
    apiPort_ = new QSpinBox(servicesBox);
    apiPort_->setRange(0, 65535);
    apiPort_->setSpecialValueText(tr("any free port"));
    apiPort_->setValue(settings_.apiPort);
    apiStatus_ = new QLabel(tr("Off"), servicesBox);
    apiStatus_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* servicesForm = new QFormLayout(servicesBox);
    servicesForm->addRow(node_);
    servicesForm->addRow(tr("Status"), nodeStatus_);
    servicesForm->addRow(api_);
    servicesForm->addRow(tr("Port on 127.0.0.1"), apiPort_);
    servicesForm->addRow(tr("Address"), apiStatus_);

    auto* about =
        new QLabel(tr("%1 · %2 physical cores · %3 RAM")
                       .arg(QString::fromStdString(cpu_model_name()))
                       .arg(physical_core_count())
                       .arg(QString::fromStdString(library::human_bytes(host_memory().total))),
                   this);
    about->setWordWrap(true);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(runtimeBox);
    layout->addWidget(libraryBox);
    layout->addWidget(servicesBox);
    layout->addWidget(about);
    layout->addStretch(1);

    connect(backend_, &QComboBox::activated, this, [this] {
        device_->clear();
        for (const auto& b : backends_)
            if (b.name == backend_->currentData().toString())
                for (int i = 0; i < b.devices.size(); ++i) device_->addItem(b.devices[i], i);
        commit();
    });
    connect(device_, &QComboBox::activated, this, &SettingsPage::commit);
    connect(threads_, &QSpinBox::editingFinished, this, &SettingsPage::commit);
    connect(context_, &QSpinBox::editingFinished, this, &SettingsPage::commit);
    connect(folder_, &QLineEdit::editingFinished, this, &SettingsPage::commit);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString dir =
            QFileDialog::getExistingDirectory(this, tr("Model folder"), folder_->text());
        if (dir.isEmpty()) return;
        folder_->setText(dir);
        commit();
    });
    connect(import, &QPushButton::clicked, this, [this] {
        if (!folder_->text().isEmpty()) emit importFolderRequested(folder_->text());
    });
    connect(node_, &QCheckBox::toggled, this, [this](bool on) {
        commit();
        emit nodeServiceToggled(on);
    });
    connect(api_, &QCheckBox::toggled, this, [this](bool on) {
        commit();
        emit apiServerToggled(on);
    });
    connect(apiPort_, &QSpinBox::editingFinished, this, &SettingsPage::commit);
    loadBackends();
}

void SettingsPage::loadBackends() {
    // Loading GPU plugins can take a while (driver start-up): off the UI thread.
    runInBackground(
        this,
        [] {
            std::vector<Backend> out;
            for (const auto& b : BackendRegistry::instance().backends()) {
                Backend x{QString::fromStdString(b.name), {}, QString::fromStdString(b.reason)};
                for (const auto& d : b.devices)
                    x.devices << QStringLiteral("%1 (%2 free)")
                                     .arg(QString::fromStdString(d.name),
                                          QString::fromStdString(
                                              library::human_bytes(d.memory_free)));
                out.push_back(std::move(x));
            }
            return out;
        },
        [this](Outcome<std::vector<Backend>> out) {
            if (!out.ok()) return;
            backends_ = std::move(*out.value);
            backend_->clear();
            for (const auto& b : backends_) {
                backend_->addItem(b.devices.isEmpty() ? tr("%1 (unavailable)").arg(b.name) : b.name,
                                  b.name);
                if (!b.reason.isEmpty())
                    backend_->setItemData(backend_->count() - 1, b.reason, Qt::ToolTipRole);
            }
            const int i = backend_->findData(settings_.backend);
            backend_->setCurrentIndex(std::max(0, i));
            device_->clear();
            for (const auto& b : backends_)
                if (b.name == backend_->currentData().toString())
                    for (int k = 0; k < b.devices.size(); ++k) device_->addItem(b.devices[k], k);
            device_->setCurrentIndex(std::max(0, device_->findData(settings_.device)));
        });
}

void SettingsPage::commit() {
    AppSettings s = settings_;
    s.backend = backend_->currentData().toString();
    s.device = std::max(0, device_->currentData().toInt());
    s.threads = threads_->value();
    s.contextSize = context_->value();
    s.modelFolder = folder_->text().trimmed();
    s.nodeService = node_->isChecked();
    s.apiServer = api_->isChecked();
    s.apiPort = apiPort_->value();
    settings_ = s;
    settings_.save();
    emit changed(settings_);
}

void SettingsPage::setApiStatus(const QString& text) {
    apiStatus_->setText(text);
}

void SettingsPage::setNodeStatus(const QString& text) {
    nodeStatus_->setText(text);
}

void SettingsPage::setNodeServiceOn(bool on) {
    node_->setChecked(on);
}

}  // namespace tandem::ui
