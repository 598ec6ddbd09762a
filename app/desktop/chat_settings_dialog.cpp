#include "chat_settings_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QVBoxLayout>

namespace tandem::ui {

ChatSettingsDialog::ChatSettingsDialog(const QString& systemPrompt, const ChatSampling& sampling,
                                       QWidget* parent)
    : QDialog(parent) {
    setWindowTitle(tr("Chat settings"));
    system_ = new QPlainTextEdit(systemPrompt, this);
    system_->setPlaceholderText(tr("System prompt (optional): how the assistant should behave"));
    preset_ = new QComboBox(this);
    for (const QString& name : samplingPresetNames()) preset_->addItem(name, name);
    preset_->addItem(QStringLiteral("custom"), QStringLiteral("custom"));
    temperature_ = new QDoubleSpinBox(this);
    temperature_->setRange(0, 5);
    temperature_->setSingleStep(0.05);
    temperature_->setToolTip(tr("0: always the most likely token (greedy)"));
    topP_ = new QDoubleSpinBox(this);
    topP_->setRange(0, 1);
    topP_->setSingleStep(0.05);
    topK_ = new QSpinBox(this);
    topK_->setRange(0, 1000);
    topK_->setSpecialValueText(tr("off"));
    minP_ = new QDoubleSpinBox(this);
    minP_->setRange(0, 1);
    minP_->setSingleStep(0.01);
    repeat_ = new QDoubleSpinBox(this);
    repeat_->setRange(0.5, 3);
    repeat_->setSingleStep(0.05);
    maxTokens_ = new QSpinBox(this);
    maxTokens_->setRange(1, 1 << 20);
    seed_ = new QSpinBox(this);
    seed_->setRange(0, 1 << 30);

    auto* form = new QFormLayout;
    form->addRow(tr("Preset"), preset_);
    form->addRow(tr("Temperature"), temperature_);
    form->addRow(tr("Top p"), topP_);
    form->addRow(tr("Top k"), topK_);
    form->addRow(tr("Min p"), minP_);
    form->addRow(tr("Repeat penalty"), repeat_);
    form->addRow(tr("Max tokens"), maxTokens_);
    form->addRow(tr("Seed"), seed_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(system_, 1);
    layout->addLayout(form);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    show(sampling);

    connect(preset_, &QComboBox::currentIndexChanged, this, [this] {
        if (showing_) return;
        const QString name = preset_->currentData().toString();
        if (name != QLatin1String("custom")) show(samplingPreset(name));
    });
    auto toCustom = [this] {
        if (!showing_) preset_->setCurrentIndex(preset_->findData(QStringLiteral("custom")));
    };
    for (auto* box : {temperature_, topP_, minP_, repeat_})
        connect(box, &QDoubleSpinBox::valueChanged, this, toCustom);
    for (auto* box : {topK_, seed_}) connect(box, &QSpinBox::valueChanged, this, toCustom);
}

void ChatSettingsDialog::show(const ChatSampling& s) {
    showing_ = true;
    const int i = preset_->findData(s.preset);
    preset_->setCurrentIndex(i >= 0 ? i : preset_->findData(QStringLiteral("custom")));
    temperature_->setValue(s.params.temperature);
    topP_->setValue(s.params.top_p);
    topK_->setValue(s.params.top_k);
    minP_->setValue(s.params.min_p);
    repeat_->setValue(s.params.repeat_penalty);
    maxTokens_->setValue(s.maxTokens);
    seed_->setValue(int(s.params.seed));
    showing_ = false;
}

QString ChatSettingsDialog::systemPrompt() const {
    return system_->toPlainText().trimmed();
}

ChatSampling ChatSettingsDialog::sampling() const {
    ChatSampling s;
    s.preset = preset_->currentData().toString();
    s.params.temperature = float(temperature_->value());
    s.params.top_p = float(topP_->value());
    s.params.top_k = topK_->value();
    s.params.min_p = float(minP_->value());
    s.params.repeat_penalty = float(repeat_->value());
    s.params.seed = uint64_t(seed_->value());
    s.maxTokens = maxTokens_->value();
    return s;
}

}  // namespace tandem::ui
