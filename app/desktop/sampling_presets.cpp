#include "sampling_presets.h"

#include <algorithm>

namespace tandem::ui {

QStringList samplingPresetNames() {
    return {QStringLiteral("precise"), QStringLiteral("balanced"), QStringLiteral("creative")};
}

ChatSampling samplingPreset(const QString& name) {
    ChatSampling s;
    s.preset = name;
    auto& p = s.params;
    if (name == QLatin1String("balanced")) {
        p.temperature = 0.7f;
        p.top_p = 0.9f;
        p.top_k = 40;
        p.min_p = 0.05f;
        p.repeat_penalty = 1.1f;
    } else if (name == QLatin1String("creative")) {
        p.temperature = 1.0f;
        p.top_p = 0.95f;
        p.top_k = 0;
        p.min_p = 0.05f;
        p.repeat_penalty = 1.05f;
    } else {  // precise: greedy, a light repeat penalty keeps small models out of loops
        s.preset = QStringLiteral("precise");
        p.repeat_penalty = 1.1f;
    }
    return s;
}

ChatSampling samplingFromJson(const nlohmann::json& j) {
    ChatSampling s = samplingPreset(QStringLiteral("precise"));
    if (!j.is_object()) return s;
    auto num = [&](const char* key, double fallback, double lo, double hi) {
        auto it = j.find(key);
        if (it == j.end() || !it->is_number()) return fallback;
        return std::clamp(it->get<double>(), lo, hi);
    };
    auto& p = s.params;
    if (auto it = j.find("preset"); it != j.end() && it->is_string())
        s.preset = QString::fromStdString(it->get<std::string>());
    p.temperature = float(num("temperature", p.temperature, 0.0, 5.0));
    p.top_p = float(num("top_p", p.top_p, 0.0, 1.0));
    p.top_k = int(num("top_k", p.top_k, 0, 1000));
    p.min_p = float(num("min_p", p.min_p, 0.0, 1.0));
    p.repeat_penalty = float(num("repeat_penalty", p.repeat_penalty, 0.5, 3.0));
    p.seed = uint64_t(num("seed", double(p.seed), 0, 1e15));
    s.maxTokens = int(num("max_tokens", s.maxTokens, 1, 1 << 20));
    return s;
}

nlohmann::json samplingToJson(const ChatSampling& s) {
    const auto& p = s.params;
    return {{"preset", s.preset.toStdString()},
            {"temperature", p.temperature},
            {"top_p", p.top_p},
            {"top_k", p.top_k},
            {"min_p", p.min_p},
            {"repeat_penalty", p.repeat_penalty},
            {"seed", p.seed},
            {"max_tokens", s.maxTokens}};
}

}  // namespace tandem::ui
