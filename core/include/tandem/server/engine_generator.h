#pragma once
// The Generator that serves a loaded model: its tokenizer, its chat template (parsed once) and
// one Engine (local, or the local shard of a tensor-parallel group).
#include <memory>
#include <optional>

#include "tandem/engine/engine.h"
#include "tandem/server/api.h"
#include "tandem/template/template.h"
#include "tandem/tokenizer/tokenizer.h"

namespace tandem::server {

class EngineGenerator : public Generator {
  public:
    // Throws TemplateError when the model's chat template does not parse; a model without one
    // still serves /v1/completions (chat requests then get a 400).
    EngineGenerator(std::string model_id, std::unique_ptr<engine::Engine> engine,
                    tokenizer::Tokenizer tokenizer);

    std::string model_id() const override { return id_; }
    std::string render_chat(const nlohmann::ordered_json& messages) const override;
    engine::GenerateResult generate(const std::string& prompt, bool add_bos,
                                    const engine::GenerateOptions& options) override;

  private:
    std::string id_;
    std::unique_ptr<engine::Engine> engine_;
    tokenizer::Tokenizer tok_;
    std::optional<ChatTemplate> template_;
    std::string bos_, eos_;
};

}  // namespace tandem::server
