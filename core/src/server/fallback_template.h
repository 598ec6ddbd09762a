#pragma once
// The chat format a model family was tuned on, for GGUFs without tokenizer.chat_template (the
// same formats `tandem-cli run` falls back to). "" when the family has none known.
#include <string>

#include "tandem/engine/model.h"
#include "tandem/tokenizer/tokenizer.h"

namespace tandem::server {

std::string fallback_chat_template(const engine::Model& model, const tokenizer::Tokenizer& tok);

}  // namespace tandem::server
