// The API over real loopback sockets with a scripted Generator: status codes, OpenAI's error
// shape, auth, CORS, SSE framing, keep-alive and the queue's 429. (The model itself is exercised
// by the Python openai client test, tests/scripts/server.cmake.)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "tandem/common/error.h"
#include "tandem/server/api.h"

using namespace tandem::server;
using json = nlohmann::json;

namespace {

// Streams the prompt back word by word; blocks while `gate` is closed so tests can fill the queue.
class ScriptedGenerator : public Generator {
  public:
    std::mutex mu;
    std::condition_variable cv;
    bool gate_open = true;
    int started = 0;

    std::string model_id() const override { return "scripted"; }
    std::string render_chat(const nlohmann::ordered_json& messages) const override {
        std::string s;
        for (const auto& m : messages) s += m["content"].get<std::string>() + " ";
        return s;
    }
    tandem::engine::GenerateResult generate(const std::string& prompt, bool,
                                            const tandem::engine::GenerateOptions& o) override {
        {
            std::unique_lock lock(mu);
            ++started;
            cv.notify_all();
            cv.wait(lock, [&] { return gate_open; });
        }
        if (prompt.find("overflow") != std::string::npos) throw tandem::Error("prompt too long");
        tandem::engine::GenerateResult r;
        r.n_prompt = 3;
        size_t pos = 0;
        while (pos < prompt.size() && static_cast<int>(r.ids.size()) < o.max_tokens) {
            size_t e = prompt.find(' ', pos);
            std::string word = prompt.substr(pos, e == std::string::npos ? e : e + 1 - pos);
            pos = e == std::string::npos ? prompt.size() : e + 1;
            r.ids.push_back(static_cast<int32_t>(r.ids.size()));
            r.text += word;
            if (o.on_text && !o.on_text(word)) break;
        }
        r.stop = pos < prompt.size() ? tandem::engine::StopReason::Length
                                     : tandem::engine::StopReason::EndOfGeneration;
        return r;
    }
};

struct Response {
    int status = 0;
    std::string head, body;
};

int connect_to(uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
}

std::string read_all(int fd) {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
}

Response split(const std::string& raw) {
    Response r;
    const size_t e = raw.find("\r\n\r\n");
    if (e == std::string::npos || raw.size() < 12) return r;
    r.head = raw.substr(0, e);
    r.body = raw.substr(e + 4);
    r.status = std::stoi(raw.substr(9, 3));
    return r;
}

// One request on its own connection (Connection: close).
Response exchange(uint16_t port, const std::string& method, const std::string& path,
                  const std::string& body = "", const std::string& extra_headers = "") {
    int fd = connect_to(port);
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
                      extra_headers + "Content-Length: " + std::to_string(body.size()) +
                      "\r\n\r\n" + body;
    EXPECT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    Response r = split(read_all(fd));
    ::close(fd);
    return r;
}

struct Fixture {
    ScriptedGenerator* gen;
    std::unique_ptr<ApiServer> api;
    std::unique_ptr<HttpServer> http;
    explicit Fixture(ApiOptions opt = {}, HttpLimits lim = {}) {
        auto g = std::make_unique<ScriptedGenerator>();
        gen = g.get();
        api = std::make_unique<ApiServer>(std::move(g), opt);
        http = std::make_unique<HttpServer>(
            "127.0.0.1", 0, lim,
            [this](const HttpRequest& r, HttpResponder& w) { api->handle(r, w); });
    }
    uint16_t port() const { return http->port(); }
};

void expect_error(const Response& r, int status, const std::string& code,
                  const std::string& param = "") {
    EXPECT_EQ(r.status, status) << r.body;
    json j = json::parse(r.body);
    ASSERT_TRUE(j.contains("error")) << r.body;
    EXPECT_TRUE(j["error"]["message"].is_string());
    EXPECT_TRUE(j["error"]["type"].is_string());
    if (!code.empty()) {
        EXPECT_EQ(j["error"]["code"], code) << r.body;
    }
    if (!param.empty()) {
        EXPECT_EQ(j["error"]["param"], param) << r.body;
    }
}

const std::string chat_body =
    R"({"model":"scripted","messages":[{"role":"user","content":"one two three"}],"max_tokens":2})";

}  // namespace

TEST(ApiHttp, ModelsAndChatCompletion) {
    Fixture f;
    auto models = exchange(f.port(), "GET", "/v1/models");
    ASSERT_EQ(models.status, 200);
    json m = json::parse(models.body);
    EXPECT_EQ(m["object"], "list");
    EXPECT_EQ(m["data"][0]["id"], "scripted");
    EXPECT_EQ(exchange(f.port(), "GET", "/v1/models/scripted").status, 200);
    expect_error(exchange(f.port(), "GET", "/v1/models/nope"), 404, "model_not_found");

    auto r = exchange(f.port(), "POST", "/v1/chat/completions", chat_body);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.head.find("Content-Type: application/json"), std::string::npos);
    EXPECT_EQ(r.head.find("Access-Control-Allow-Origin"), std::string::npos);  // CORS off
    json c = json::parse(r.body);
    EXPECT_EQ(c["object"], "chat.completion");
    EXPECT_EQ(c["choices"][0]["message"]["role"], "assistant");
    EXPECT_EQ(c["choices"][0]["message"]["content"], "one two ");
    EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(c["usage"]["prompt_tokens"], 3);
    EXPECT_EQ(c["usage"]["completion_tokens"], 2);
    EXPECT_EQ(c["usage"]["total_tokens"], 5);
}

TEST(ApiHttp, StreamedCompletionIsServerSentEvents) {
    Fixture f;
    auto r = exchange(f.port(), "POST", "/v1/completions",
                      R"({"model":"scripted","prompt":"a b c","stream":true,
                          "stream_options":{"include_usage":true}})");
    ASSERT_EQ(r.status, 200);
    EXPECT_NE(r.head.find("Content-Type: text/event-stream"), std::string::npos);
    std::vector<std::string> events;
    for (size_t pos = 0; pos < r.body.size();) {
        ASSERT_EQ(r.body.compare(pos, 6, "data: "), 0) << r.body;
        size_t e = r.body.find("\n\n", pos);
        ASSERT_NE(e, std::string::npos);
        events.push_back(r.body.substr(pos + 6, e - pos - 6));
        pos = e + 2;
    }
    ASSERT_EQ(events.size(), 6u);  // 3 words, finish, usage, [DONE]
    std::string text;
    for (int i = 0; i < 3; ++i) text += json::parse(events[i])["choices"][0]["text"];
    EXPECT_EQ(text, "a b c");
    EXPECT_EQ(json::parse(events[3])["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(json::parse(events[4])["usage"]["completion_tokens"], 3);
    EXPECT_EQ(events[5], "[DONE]");
}

TEST(ApiHttp, BadRequestsGetOpenAIErrors) {
    Fixture f;
    const std::string p = "/v1/chat/completions";
    expect_error(exchange(f.port(), "POST", p, "{not json"), 400, "");
    expect_error(exchange(f.port(), "POST", p, "[1,2]"), 400, "");
    expect_error(exchange(f.port(), "POST", p, R"({"messages":[]})"), 400, "", "model");
    expect_error(exchange(f.port(), "POST", p,
                          R"({"model":"gpt-4","messages":[{"role":"user","content":"x"}]})"),
                 404, "model_not_found", "model");
    expect_error(exchange(f.port(), "POST", p, R"({"model":"scripted","messages":[]})"), 400, "",
                 "messages");
    expect_error(exchange(f.port(), "POST", p,
                          R"({"model":"scripted","messages":[{"role":"wizard","content":"x"}]})"),
                 400, "", "messages[0].role");
    for (const char* field :
         {R"("temperature":3)", R"("max_tokens":0)", R"("max_tokens":"9")", R"("top_p":1.5)",
          R"("n":2)", R"("stop":[1])", R"("stop":["a","b","c","d","e"])", R"("stream":"yes")"}) {
        auto r = exchange(f.port(), "POST", p,
                          R"({"model":"scripted","messages":[{"role":"user","content":"x"}],)" +
                              std::string(field) + "}");
        expect_error(r, 400, "");
    }
    expect_error(exchange(f.port(), "POST", "/v1/completions",
                          R"({"model":"scripted","prompt":"overflow"})"),
                 400, "context_length_exceeded");
    expect_error(exchange(f.port(), "GET", p), 405, "method_not_allowed");
    expect_error(exchange(f.port(), "POST", "/v1/embeddings", "{}"), 404, "unknown_url");
}

TEST(ApiHttp, OversizedBodyIs413) {
    HttpLimits lim;
    lim.max_body_bytes = 1024;
    Fixture f({}, lim);
    expect_error(exchange(f.port(), "POST", "/v1/completions", std::string(2000, ' ')), 413, "");
}

TEST(ApiHttp, ApiKeyAndCors) {
    ApiOptions opt;
    opt.api_key = "sekrit";
    opt.cors_origin = "http://localhost:3000";
    Fixture f(opt);
    expect_error(exchange(f.port(), "GET", "/v1/models"), 401, "invalid_api_key");
    expect_error(exchange(f.port(), "GET", "/v1/models", "", "Authorization: Bearer wrong\r\n"),
                 401, "invalid_api_key");
    auto ok = exchange(f.port(), "GET", "/v1/models", "", "Authorization: Bearer sekrit\r\n");
    EXPECT_EQ(ok.status, 200);
    EXPECT_NE(ok.head.find("Access-Control-Allow-Origin: http://localhost:3000"),
              std::string::npos);
    auto pre = exchange(f.port(), "OPTIONS", "/v1/chat/completions");
    EXPECT_EQ(pre.status, 204);
    EXPECT_NE(pre.head.find("Access-Control-Allow-Headers: Authorization, Content-Type"),
              std::string::npos);
}

TEST(ApiHttp, KeepAliveServesSeveralRequestsOnOneConnection) {
    Fixture f;
    int fd = connect_to(f.port());
    std::string two;
    for (int i = 0; i < 2; ++i)
        two += "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
               std::to_string(chat_body.size()) + "\r\n\r\n" + chat_body;
    two += "GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n";
    ASSERT_EQ(::send(fd, two.data(), two.size(), MSG_NOSIGNAL), static_cast<ssize_t>(two.size()));
    const std::string all = read_all(fd);
    ::close(fd);
    size_t n = 0;
    for (size_t pos = 0; (pos = all.find("HTTP/1.1 200 OK", pos)) != std::string::npos; ++pos) ++n;
    EXPECT_EQ(n, 3u) << all;
}

TEST(ApiHttp, FullQueueAnswers429WithRetryAfter) {
    ApiOptions opt;
    opt.max_queue = 2;
    Fixture f(opt);
    {
        std::lock_guard lock(f.gen->mu);
        f.gen->gate_open = false;
    }
    // One request runs (held at the gate), two wait: the queue is full.
    std::vector<std::future<Response>> held;
    held.push_back(std::async(std::launch::async, [&] {
        return exchange(f.port(), "POST", "/v1/chat/completions", chat_body);
    }));
    {
        std::unique_lock lock(f.gen->mu);
        f.gen->cv.wait(lock, [&] { return f.gen->started == 1; });
    }
    for (int i = 0; i < 2; ++i)
        held.push_back(std::async(std::launch::async, [&] {
            return exchange(f.port(), "POST", "/v1/chat/completions", chat_body);
        }));
    while (f.api->queued() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto busy = exchange(f.port(), "POST", "/v1/chat/completions", chat_body);
    expect_error(busy, 429, "rate_limit_exceeded");
    EXPECT_NE(busy.head.find("Retry-After: 1"), std::string::npos);
    // Reading the models does not queue.
    EXPECT_EQ(exchange(f.port(), "GET", "/v1/models").status, 200);
    {
        std::lock_guard lock(f.gen->mu);
        f.gen->gate_open = true;
    }
    f.gen->cv.notify_all();
    for (auto& h : held) EXPECT_EQ(h.get().status, 200);
}
