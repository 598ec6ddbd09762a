#pragma once
// Reading the body of a completions request into generation options, with OpenAI's checks and
// error shape: a bad field throws ApiError naming it (param) and the HTTP status.
#include <string>

#include <nlohmann/json.hpp>

#include "tandem/common/error.h"
#include "tandem/engine/generate.h"

namespace tandem::server {

struct ApiError : Error {
    ApiError(int status_, std::string message, std::string param_ = "", std::string code_ = "",
             std::string type_ = "invalid_request_error")
        : Error(message),
          status(status_),
          param(std::move(param_)),
          code(std::move(code_)),
          type(std::move(type_)) {}
    int status;
    std::string param, code, type;
};

struct CompletionRequest {
    std::string model;
    bool chat = false;
    nlohmann::ordered_json messages;  // chat: [{role, content}] with content as plain text
    std::string prompt;               // completions
    bool stream = false, include_usage = false;
    engine::GenerateOptions options;  // max_tokens, sampling, stop strings
};

struct RequestLimits {
    int max_tokens_default = 256;
    int max_tokens_limit = 8192;
};

// body: the raw request body. Throws ApiError (400) for bad JSON or fields.
CompletionRequest parse_completion_request(const std::string& body, bool chat,
                                           const RequestLimits& limits);

}  // namespace tandem::server
