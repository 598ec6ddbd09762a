#pragma once
// The OpenAI-compatible API (/v1/models, /v1/chat/completions, /v1/completions, streamed as
// server-sent events or whole) over one Generator. Requests are validated on their connection's
// thread, then wait in a bounded FIFO queue for the one worker that runs the model; a full queue
// answers 429 with Retry-After. Errors have OpenAI's shape:
//   {"error": {"message": ..., "type": "invalid_request_error", "param": ..., "code": ...}}
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tandem/engine/generate.h"
#include "tandem/server/http.h"

namespace tandem::server {

// What the API runs: one model, used by one thread at a time (the queue's worker).
class Generator {
  public:
    virtual ~Generator() = default;
    virtual std::string model_id() const = 0;
    // The prompt text for a chat (the model's chat template with the generation prompt).
    // Called from any thread. Throws tandem::Error when the messages cannot be rendered.
    virtual std::string render_chat(const nlohmann::ordered_json& messages) const = 0;
    // add_bos: false for rendered chats (the template writes BOS itself). n_prompt in the result
    // is the prompt's token count; ids the generated tokens. Throws tandem::Error for a request
    // the model cannot serve (prompt longer than the context).
    virtual engine::GenerateResult generate(const std::string& prompt, bool add_bos,
                                            const engine::GenerateOptions& options) = 0;
};

struct ApiOptions {
    std::string api_key;      // empty: no key asked for
    std::string cors_origin;  // empty: no CORS headers (browsers on other origins are refused)
    size_t max_queue = 16;    // requests waiting (besides the one running); more get 429
    int max_tokens_default = 256;
    int max_tokens_limit = 8192;
};

class ApiServer {
  public:
    ApiServer(std::unique_ptr<Generator> generator, ApiOptions options);
    ~ApiServer();  // finishes the running job, fails the waiting ones with 503
    ApiServer(const ApiServer&) = delete;
    ApiServer& operator=(const ApiServer&) = delete;

    // The HTTP handler to give HttpServer (call from any number of threads).
    void handle(const HttpRequest& request, HttpResponder& out);
    size_t queued() const;

  private:
    struct Job;
    void worker_loop();
    // Waits its turn and runs `work` on the worker thread; false when the queue is full.
    bool run_queued(const std::function<void()>& work, bool& shut_down);

    std::unique_ptr<Generator> gen_;
    ApiOptions opt_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Job>> queue_;
    bool stopping_ = false;
    std::thread worker_;
};

}  // namespace tandem::server
