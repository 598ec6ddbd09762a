#pragma once
// Tokens -> syntax tree, following Jinja2's grammar and operator precedence (filters and tests
// bind tighter than arithmetic; `~` between + and *; comparisons chain).
#include <vector>

#include "ast.h"
#include "lexer.h"

namespace tandem::jinja {

// Throws TemplateError naming the unexpected token and where it is.
Body parse(const std::vector<Token>& tokens);

}  // namespace tandem::jinja
