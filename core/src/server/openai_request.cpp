// Field checks follow OpenAI's documented ranges, so a client that works against OpenAI gets the
// same errors here; extensions (top_k, min_p, repeat_penalty) are llama.cpp's spellings.
#include "openai_request.h"

#include <limits>
#include <random>

namespace tandem::server {

namespace {

using json = nlohmann::ordered_json;

double number(const json& body, const char* key, double lo, double hi, double fallback) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return fallback;
    if (!it->is_number()) throw ApiError(400, std::string("'") + key + "' must be a number", key);
    const double v = it->get<double>();
    if (!(v >= lo && v <= hi))
        throw ApiError(400,
                       std::string("'") + key + "' is " + it->dump() + ", must be in [" +
                           std::to_string(lo) + ", " + std::to_string(hi) + "]",
                       key);
    return v;
}

int64_t integer(const json& body, const char* key, int64_t lo, int64_t hi, int64_t fallback) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return fallback;
    if (!it->is_number_integer())
        throw ApiError(400, std::string("'") + key + "' must be an integer", key);
    if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi))
        throw ApiError(400, std::string("'") + key + "' is too large", key);
    const int64_t v = it->get<int64_t>();
    if (v < lo || v > hi)
        throw ApiError(400,
                       std::string("'") + key + "' is " + std::to_string(v) + ", must be in [" +
                           std::to_string(lo) + ", " + std::to_string(hi) + "]",
                       key);
    return v;
}

bool boolean(const json& body, const char* key) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return false;
    if (!it->is_boolean()) throw ApiError(400, std::string("'") + key + "' must be a boolean", key);
    return it->get<bool>();
}

// Message content: a string, or an array of {"type": "text", "text": ...} parts.
std::string content_text(const json& content, const std::string& param) {
    if (content.is_null()) return "";
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array())
        throw ApiError(400, "'" + param + "' must be a string or an array of text parts", param);
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const json& part = content[i];
        const std::string p = param + "[" + std::to_string(i) + "]";
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string())
            throw ApiError(
                400, "'" + p + "': only {\"type\": \"text\", \"text\": ...} parts are supported",
                p);
        text += part["text"].get<std::string>();
    }
    return text;
}

json chat_messages(const json& body) {
    auto it = body.find("messages");
    if (it == body.end()) throw ApiError(400, "'messages' is required", "messages");
    if (!it->is_array() || it->empty())
        throw ApiError(400, "'messages' must be a non-empty array", "messages");
    json out = json::array();
    for (size_t i = 0; i < it->size(); ++i) {
        const json& m = (*it)[i];
        const std::string p = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) throw ApiError(400, "'" + p + "' must be an object", p);
        if (!m.contains("role") || !m["role"].is_string())
            throw ApiError(400, "'" + p + ".role' is required (a string)", p + ".role");
        std::string role = m["role"].get<std::string>();
        if (role == "developer") role = "system";
        if (role != "system" && role != "user" && role != "assistant" && role != "tool")
            throw ApiError(
                400, "'" + p + ".role' is '" + role + "', not one of system, user, assistant, tool",
                p + ".role");
        if (!m.contains("content") && role != "assistant")
            throw ApiError(400, "'" + p + ".content' is required", p + ".content");
        json msg = {{"role", role},
                    {"content",
                     content_text(m.contains("content") ? m["content"] : json(), p + ".content")}};
        out.push_back(std::move(msg));
    }
    return out;
}

std::vector<std::string> stop_strings(const json& body) {
    auto it = body.find("stop");
    if (it == body.end() || it->is_null()) return {};
    std::vector<std::string> out;
    if (it->is_string()) {
        out.push_back(it->get<std::string>());
    } else if (it->is_array()) {
        if (it->size() > 4) throw ApiError(400, "'stop' has more than 4 sequences", "stop");
        for (const auto& s : *it) {
            if (!s.is_string()) throw ApiError(400, "'stop' must hold strings", "stop");
            out.push_back(s.get<std::string>());
        }
    } else {
        throw ApiError(400, "'stop' must be a string or an array of strings", "stop");
    }
    for (const auto& s : out)
        if (s.empty()) throw ApiError(400, "'stop' sequences must not be empty", "stop");
    return out;
}

}  // namespace

CompletionRequest parse_completion_request(const std::string& body_text, bool chat,
                                           const RequestLimits& limits) {
    json body;
    try {
        body = json::parse(body_text);
    } catch (const json::parse_error& e) {
        throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
    }
    if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
    CompletionRequest r;
    r.chat = chat;
    auto model = body.find("model");
    if (model == body.end() || !model->is_string())
        throw ApiError(400, "'model' is required (a string)", "model");
    r.model = model->get<std::string>();
    if (chat) {
        r.messages = chat_messages(body);
    } else {
        auto p = body.find("prompt");
        if (p == body.end()) throw ApiError(400, "'prompt' is required", "prompt");
        if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
            r.prompt = (*p)[0].get<std::string>();
        } else if (p->is_string()) {
            r.prompt = p->get<std::string>();
        } else {
            throw ApiError(400, "'prompt' must be a string (or an array of one string)", "prompt");
        }
        if (boolean(body, "echo")) throw ApiError(400, "'echo' is not supported", "echo");
    }
    if (integer(body, "n", 1, 1, 1) != 1) throw ApiError(400, "'n' must be 1", "n");
    r.stream = boolean(body, "stream");
    if (auto so = body.find("stream_options"); so != body.end() && !so->is_null()) {
        if (!so->is_object())
            throw ApiError(400, "'stream_options' must be an object", "stream_options");
        if (!r.stream)
            throw ApiError(400, "'stream_options' is only allowed with 'stream': true",
                           "stream_options");
        r.include_usage = boolean(*so, "include_usage");
    }
    auto& o = r.options;
    const char* max_key =
        chat && body.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    o.max_tokens = static_cast<int>(
        integer(body, max_key, 1, limits.max_tokens_limit, limits.max_tokens_default));
    auto& s = o.sampling;
    s.temperature = static_cast<float>(number(body, "temperature", 0, 2, 1));
    s.top_p = static_cast<float>(number(body, "top_p", 0, 1, 1));
    if (s.top_p <= 0) s.top_p = 1e-6f;  // OpenAI accepts 0: keep only the top token
    s.presence_penalty = static_cast<float>(number(body, "presence_penalty", -2, 2, 0));
    s.frequency_penalty = static_cast<float>(number(body, "frequency_penalty", -2, 2, 0));
    s.top_k = static_cast<int>(integer(body, "top_k", 0, 1 << 20, 0));
    s.min_p = static_cast<float>(number(body, "min_p", 0, 1, 0));
    s.repeat_penalty = static_cast<float>(number(body, "repeat_penalty", 0.01, 10, 1));
    s.seed = static_cast<uint64_t>(integer(body, "seed", std::numeric_limits<int64_t>::min(),
                                           std::numeric_limits<int64_t>::max(), 0));
    if (!body.contains("seed") || body["seed"].is_null()) s.seed = std::random_device{}();
    o.stop_strings = stop_strings(body);
    return r;
}

}  // namespace tandem::server
