#pragma once
// Chat templates: a Jinja2 interpreter for the subset that real chat templates use, rendering the
// way Hugging Face's apply_chat_template does (trim_blocks and lstrip_blocks on, loopcontrols,
// tojson with ensure_ascii=False, raise_exception, strftime_now).
//
//   nlohmann::ordered_json ctx = {{"messages", msgs}, {"add_generation_prompt", true},
//                                 {"bos_token", "<s>"}, {"eos_token", "</s>"}};
//   std::string prompt = tandem::render_template(source, ctx, {});
//
// Context objects keep their key order when given as ordered_json (Python dicts keep insertion
// order, and `tojson` or `for k, v in d.items()` show it); the plain nlohmann::json overload sees
// keys sorted, as nlohmann::json stores them.
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tandem/common/error.h"

namespace tandem {

struct RenderOptions {
    bool trim_blocks = true;    // drop the first newline after a block tag
    bool lstrip_blocks = true;  // drop spaces and tabs before a block tag at the start of a line
    bool keep_trailing_newline = false;  // Jinja2's default drops one final newline of the source
    // What strftime_now() formats; the system clock (local time) when unset. Tests fix it.
    std::optional<std::chrono::system_clock::time_point> now;
    // Robustness caps: a template that runs past them fails with TemplateError instead of
    // hanging or exhausting memory.
    size_t max_output_bytes = size_t(256) << 20;
    size_t max_steps = 5'000'000;  // statements, loop iterations and calls together
    int max_call_depth = 200;      // nested macro calls
};

// A template that does not parse, or fails while rendering (undefined variable used in arithmetic,
// raise_exception(...), a type error, a cap reached). line/column are 1-based, 0 when unknown.
class TemplateError : public Error {
  public:
    TemplateError(const std::string& message, int line, int column);
    const std::string& message() const { return message_; }  // without the position
    int line() const { return line_; }
    int column() const { return column_; }

  private:
    std::string message_;
    int line_ = 0;
    int column_ = 0;
};

// A parsed template, for rendering many times: a model's template is parsed once when the model
// loads (so a broken template is reported then) and rendered every turn. Rendering is const and
// safe from several threads at once.
class ChatTemplate {
  public:
    // Throws TemplateError when the source does not parse.
    explicit ChatTemplate(std::string_view source, const RenderOptions& options = {});
    std::string render(const nlohmann::ordered_json& context) const;
    const RenderOptions& options() const;

  private:
    struct Impl;
    std::shared_ptr<const Impl> impl_;
};

// Parse and render in one go.
std::string render_template(std::string_view source, const nlohmann::ordered_json& context,
                            const RenderOptions& options = {});
std::string render_template(std::string_view source, const nlohmann::json& context,
                            const RenderOptions& options = {});

}  // namespace tandem
