#pragma once
// A conversation's system prompt and sampling settings, with presets (precise, balanced,
// creative); editing a value by hand makes the preset "custom".
#include <QComboBox>
#include <QDialog>
#include <QDoubleSpinBox>
#include <QPlainTextEdit>
#include <QSpinBox>

#include "sampling_presets.h"

namespace tandem::ui {

class ChatSettingsDialog : public QDialog {
    Q_OBJECT
  public:
    ChatSettingsDialog(const QString& systemPrompt, const ChatSampling& sampling,
                       QWidget* parent = nullptr);

    QString systemPrompt() const;
    ChatSampling sampling() const;
    QComboBox* presetBox() { return preset_; }
    QDoubleSpinBox* temperatureBox() { return temperature_; }

  private:
    void show(const ChatSampling& s);

    QPlainTextEdit* system_ = nullptr;
    QComboBox* preset_ = nullptr;
    QDoubleSpinBox* temperature_ = nullptr;
    QDoubleSpinBox* topP_ = nullptr;
    QSpinBox* topK_ = nullptr;
    QDoubleSpinBox* minP_ = nullptr;
    QDoubleSpinBox* repeat_ = nullptr;
    QSpinBox* maxTokens_ = nullptr;
    QSpinBox* seed_ = nullptr;
    bool showing_ = false;
};

}  // namespace tandem::ui
