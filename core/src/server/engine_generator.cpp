// Serving one loaded model: chat rendering like `tandem-cli run`, generation with the engine's
// prefix cache (a follow-up turn of the same chat reuses the cached tokens).
#include "tandem/server/engine_generator.h"

#include <algorithm>

#include "tandem/common/error.h"
#include "tandem/engine/fallback_template.h"

namespace tandem::server {

EngineGenerator::EngineGenerator(std::string model_id, std::unique_ptr<engine::Engine> engine,
                                 tokenizer::Tokenizer tokenizer)
    : id_(std::move(model_id)), engine_(std::move(engine)), tok_(std::move(tokenizer)) {
    const auto& v = tok_.vocab();
    const std::string source = v.chat_template.empty()
                                   ? engine::fallback_chat_template(engine_->model(), tok_)
                                   : v.chat_template;
    if (!source.empty()) template_.emplace(source);
    if (v.bos_id >= 0) bos_ = tok_.token_to_piece(v.bos_id, true);
    if (v.eos_id >= 0) eos_ = tok_.token_to_piece(v.eos_id, true);
}

std::string EngineGenerator::render_chat(const nlohmann::ordered_json& messages) const {
    if (!template_)
        throw Error("model '" + id_ +
                    "' has no chat template (tokenizer.chat_template); use /v1/completions");
    nlohmann::ordered_json ctx = {{"messages", messages},
                                  {"add_generation_prompt", true},
                                  {"bos_token", bos_},
                                  {"eos_token", eos_}};
    return template_->render(ctx);
}

engine::GenerateResult EngineGenerator::generate(const std::string& prompt, bool add_bos,
                                                 const engine::GenerateOptions& options) {
    // Special tokens written in the prompt ("<start_of_turn>") are parsed as such, as the CLI
    // does, so a client can send a pre-rendered prompt to /v1/completions.
    const std::vector<int32_t> ids = tok_.encode(prompt, add_bos, true);
    const int64_t n_ctx = engine_->n_ctx();
    if (ids.empty()) throw Error("the prompt is empty");
    if (static_cast<int64_t>(ids.size()) >= n_ctx)
        throw Error("the prompt is " + std::to_string(ids.size()) + " tokens, the context holds " +
                    std::to_string(n_ctx));
    engine::GenerateOptions o = options;
    // Never decode past the context: the reply ends with finish_reason "length" instead.
    o.max_tokens =
        static_cast<int>(std::min<int64_t>(o.max_tokens, n_ctx - static_cast<int64_t>(ids.size())));
    return engine::generate(*engine_, ids, &tok_, o);
}

}  // namespace tandem::server
