#pragma once
// The chat format a model family was tuned on, for GGUFs without tokenizer.chat_template (e.g.
// the default Gemma 3 270M). One definition for the CLI, the API server and the app. "" when the
// family has no known format.
#include <string>

#include "tandem/engine/model.h"
#include "tandem/tokenizer/tokenizer.h"

namespace tandem::engine {

std::string fallback_chat_template(const Model& model, const tokenizer::Tokenizer& tok);

// The model's own template, else the fallback, else ChatML (accepted by most small instruct
// models).
std::string chat_template_for(const Model& model, const tokenizer::Tokenizer& tok);

}  // namespace tandem::engine
