// Routing, authentication, CORS, the fair FIFO queue in front of the one model, and the
// response shapes of OpenAI's chat.completion / text_completion (whole and streamed).
#include <atomic>
#include <chrono>
#include <ctime>
#include <random>

#include "openai_request.h"
#include "tandem/common/log.h"
#include "tandem/server/api.h"

namespace tandem::server {

namespace {

using json = nlohmann::ordered_json;
using Headers = std::vector<std::pair<std::string, std::string>>;

std::string error_body(const std::string& message, const std::string& type,
                       const std::string& param, const std::string& code) {
    json e = {{"message", message},
              {"type", type},
              {"param", param.empty() ? json() : json(param)},
              {"code", code.empty() ? json() : json(code)}};
    return json{{"error", e}}.dump();
}

const char* finish_reason(engine::StopReason r) {
    return r == engine::StopReason::Length ? "length" : "stop";
}

std::string new_id(const char* prefix) {
    static std::atomic<uint64_t> counter{0};
    static const uint64_t salt = std::random_device{}();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s-%llx%06llx", prefix, static_cast<unsigned long long>(salt),
                  static_cast<unsigned long long>(++counter));
    return buf;
}

json usage(const engine::GenerateResult& r) {
    const auto completion = static_cast<int64_t>(r.ids.size());
    return {{"prompt_tokens", r.n_prompt},
            {"completion_tokens", completion},
            {"total_tokens", r.n_prompt + completion}};
}

}  // namespace

struct ApiServer::Job {
    std::function<void()> work;
    bool done = false;
};

ApiServer::ApiServer(std::unique_ptr<Generator> generator, ApiOptions options)
    : gen_(std::move(generator)), opt_(std::move(options)) {
    worker_ = std::thread([this] { worker_loop(); });
}

ApiServer::~ApiServer() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
}

size_t ApiServer::queued() const {
    std::lock_guard lock(mu_);
    return queue_.size();
}

void ApiServer::worker_loop() {
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (stopping_) {
                // Waiting requests are told the server is going away (their work never runs).
                for (auto& j : queue_) j->done = true;
                queue_.clear();
                cv_.notify_all();
                return;
            }
            job = queue_.front();
            queue_.pop_front();
        }
        try {
            job->work();
        } catch (const std::exception& e) {
            log_error(std::string("serve: job failed: ") + e.what());
        }
        {
            std::lock_guard lock(mu_);
            job->done = true;
        }
        cv_.notify_all();
    }
}

bool ApiServer::run_queued(const std::function<void()>& work, bool& shut_down) {
    bool ran = false;
    auto job = std::make_shared<Job>();
    job->work = [&] {
        ran = true;
        work();
    };
    std::unique_lock lock(mu_);
    if (stopping_ || queue_.size() >= opt_.max_queue) {
        shut_down = stopping_;
        return shut_down;
    }
    queue_.push_back(job);
    cv_.notify_all();
    cv_.wait(lock, [&] { return job->done; });
    shut_down = !ran;
    return true;
}

void ApiServer::handle(const HttpRequest& req, HttpResponder& out) {
    Headers cors;
    if (!opt_.cors_origin.empty())
        cors = {{"Access-Control-Allow-Origin", opt_.cors_origin},
                {"Access-Control-Allow-Headers", "Authorization, Content-Type"},
                {"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
                {"Vary", "Origin"}};
    auto fail = [&](int status, const std::string& message, const std::string& type,
                    const std::string& param, const std::string& code, Headers extra = {}) {
        extra.insert(extra.end(), cors.begin(), cors.end());
        out.send(status, "application/json", error_body(message, type, param, code), extra);
    };
    auto ok = [&](const json& body) { out.send(200, "application/json", body.dump(), cors); };

    if (req.method == "OPTIONS" && !cors.empty()) {
        out.send(204, "text/plain", "", cors);
        return;
    }
    if (!opt_.api_key.empty() && req.header("authorization") != "Bearer " + opt_.api_key) {
        fail(401, "Incorrect or missing API key (send 'Authorization: Bearer <key>')",
             "invalid_request_error", "", "invalid_api_key");
        return;
    }
    const std::string& path = req.path;
    const bool chat = path == "/v1/chat/completions";
    const bool completions = path == "/v1/completions";
    const std::string id = gen_->model_id();
    if (path == "/health" || path == "/v1/models" || path.rfind("/v1/models/", 0) == 0) {
        if (req.method != "GET") {
            fail(405, "use GET for " + path, "invalid_request_error", "", "method_not_allowed");
            return;
        }
        const json model = {
            {"id", id}, {"object", "model"}, {"created", 0}, {"owned_by", "tandem"}};
        if (path == "/health")
            ok({{"status", "ok"}, {"queued", queued()}});
        else if (path == "/v1/models")
            ok({{"object", "list"}, {"data", json::array({model})}});
        else if (path.substr(11) == id)
            ok(model);
        else
            fail(404, "The model '" + path.substr(11) + "' does not exist", "invalid_request_error",
                 "model", "model_not_found");
        return;
    }
    if (!chat && !completions) {
        fail(404, "Unknown request URL: " + req.method + " " + path, "invalid_request_error", "",
             "unknown_url");
        return;
    }
    if (req.method != "POST") {
        fail(405, "use POST for " + path, "invalid_request_error", "", "method_not_allowed");
        return;
    }

    CompletionRequest r;
    std::string prompt;
    try {
        r = parse_completion_request(req.body, chat,
                                     {opt_.max_tokens_default, opt_.max_tokens_limit});
        if (r.model != id)
            throw ApiError(404, "The model '" + r.model + "' does not exist", "model",
                           "model_not_found");
        prompt = chat ? gen_->render_chat(r.messages) : r.prompt;
    } catch (const ApiError& e) {
        fail(e.status, e.what(), e.type, e.param, e.code);
        return;
    } catch (const Error& e) {
        fail(400, e.what(), "invalid_request_error", "messages", "");
        return;
    }

    const std::string cid = new_id(chat ? "chatcmpl" : "cmpl");
    const auto created = static_cast<int64_t>(std::time(nullptr));
    const char* object = chat ? "chat.completion" : "text_completion";
    const char* chunk_object = chat ? "chat.completion.chunk" : "text_completion";
    auto chunk = [&](const std::string& text, const json& finish) {
        json choice =
            chat ? json{{"index", 0},
                        {"delta", finish.is_null() ? json{{"content", text}} : json::object()},
                        {"finish_reason", finish}}
                 : json{{"index", 0},
                        {"text", text},
                        {"logprobs", nullptr},
                        {"finish_reason", finish}};
        return json{{"id", cid},
                    {"object", chunk_object},
                    {"created", created},
                    {"model", id},
                    {"choices", json::array({choice})}};
    };

    bool shut_down = false;
    const bool admitted = run_queued(
        [&] {
            engine::GenerateOptions o = r.options;
            bool client_gone = false;
            if (r.stream) {
                if (!out.start_events(cors)) return;
                if (chat) {
                    json first = chunk("", nullptr);
                    first["choices"][0]["delta"] = {{"role", "assistant"}, {"content", ""}};
                    client_gone = !out.event(first.dump());
                }
                o.on_text = [&](std::string_view t) {
                    client_gone = client_gone || !out.event(chunk(std::string(t), nullptr).dump());
                    return !client_gone;
                };
            }
            engine::GenerateResult g;
            try {
                g = gen_->generate(prompt, !chat, o);
            } catch (const Error& e) {
                if (r.stream)
                    out.event(
                        json::parse(error_body(e.what(), "invalid_request_error", "", "")).dump());
                else
                    fail(400, e.what(), "invalid_request_error", chat ? "messages" : "prompt",
                         "context_length_exceeded");
                return;
            }
            if (r.stream) {
                if (client_gone) return;
                out.event(chunk("", finish_reason(g.stop)).dump());
                if (r.include_usage) {
                    json u = {{"id", cid},   {"object", chunk_object},   {"created", created},
                              {"model", id}, {"choices", json::array()}, {"usage", usage(g)}};
                    out.event(u.dump());
                }
                out.event("[DONE]");
                return;
            }
            json choice = chat ? json{{"index", 0},
                                      {"message", {{"role", "assistant"}, {"content", g.text}}},
                                      {"logprobs", nullptr},
                                      {"finish_reason", finish_reason(g.stop)}}
                               : json{{"index", 0},
                                      {"text", g.text},
                                      {"logprobs", nullptr},
                                      {"finish_reason", finish_reason(g.stop)}};
            ok({{"id", cid},
                {"object", object},
                {"created", created},
                {"model", id},
                {"choices", json::array({choice})},
                {"usage", usage(g)}});
        },
        shut_down);
    if (!admitted)
        fail(429,
             "The server is busy: " + std::to_string(opt_.max_queue) +
                 " requests are already waiting. Retry shortly.",
             "requests", "", "rate_limit_exceeded", {{"Retry-After", "1"}});
    else if (shut_down)
        fail(503, "The server is shutting down", "server_error", "", "shutting_down");
}

}  // namespace tandem::server
