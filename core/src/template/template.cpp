#include "tandem/template/template.h"

#include "interpreter.h"
#include "lexer.h"
#include "parser.h"

namespace tandem {
namespace {

std::string with_position(const std::string& message, int line, int column) {
    if (line <= 0) return "chat template: " + message;
    return "chat template line " + std::to_string(line) + ", column " + std::to_string(column) +
           ": " + message;
}

}  // namespace

TemplateError::TemplateError(const std::string& message, int line, int column)
    : Error(with_position(message, line, column)),
      message_(message),
      line_(line),
      column_(column) {}

struct ChatTemplate::Impl {
    RenderOptions options;
    jinja::Body body;
};

ChatTemplate::ChatTemplate(std::string_view source, const RenderOptions& options) {
    jinja::LexOptions lex;
    lex.trim_blocks = options.trim_blocks;
    lex.lstrip_blocks = options.lstrip_blocks;
    lex.keep_trailing_newline = options.keep_trailing_newline;
    auto impl = std::make_shared<Impl>();
    impl->options = options;
    impl->body = jinja::parse(jinja::tokenize(source, lex));
    impl_ = std::move(impl);
}

const RenderOptions& ChatTemplate::options() const {
    return impl_->options;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& context) const {
    using namespace jinja;
    try {
        Interpreter interpreter(impl_->options, Value::from_json(context));
        return interpreter.render(impl_->body);
    } catch (const TemplateError&) {
        throw;
    } catch (const EvalError& e) {
        throw TemplateError(e.what(), 0, 0);
    } catch (const std::bad_alloc&) {
        throw TemplateError("out of memory while rendering", 0, 0);
    }
}

std::string render_template(std::string_view source, const nlohmann::ordered_json& context,
                            const RenderOptions& options) {
    return ChatTemplate(source, options).render(context);
}

std::string render_template(std::string_view source, const nlohmann::json& context,
                            const RenderOptions& options) {
    return render_template(source, nlohmann::ordered_json::parse(context.dump()), options);
}

}  // namespace tandem
