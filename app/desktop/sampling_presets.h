#pragma once
// Sampling settings of a conversation, stored as JSON in the conversation
// ({"preset": "balanced", "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
//   "repeat_penalty": 1.1, "max_tokens": 1024, "seed": 0}), and the presets the UI offers.
#include <QString>
#include <QStringList>

#include <nlohmann/json.hpp>

#include "tandem/engine/sampler.h"

namespace tandem::ui {

struct ChatSampling {
    engine::SamplingParams params;
    int maxTokens = 1024;
    QString preset = QStringLiteral("precise");  // or "balanced", "creative", "custom"
};

// The preset names, in the order the UI lists them.
QStringList samplingPresetNames();
// A preset's settings; unknown names give "precise" (greedy).
ChatSampling samplingPreset(const QString& name);

// Missing keys keep the defaults of "precise"; values out of range are clamped.
ChatSampling samplingFromJson(const nlohmann::json& j);
nlohmann::json samplingToJson(const ChatSampling& s);

}  // namespace tandem::ui
