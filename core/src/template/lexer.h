#pragma once
// Splits a Jinja2 template into tokens with Jinja2's whitespace rules applied to the text
// between tags: `{%-`/`-%}` strip, trim_blocks drops the newline after a block or comment tag,
// lstrip_blocks drops the indentation before one, `+` turns either off for one tag, raw blocks
// come out as text, comments vanish.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::jinja {

struct Pos {
    int line = 0;
    int column = 0;
};

enum class Tok : uint8_t {
    Text,        // template data (text holds it)
    VarBegin,    // {{
    VarEnd,      // }}
    BlockBegin,  // {%
    BlockEnd,    // %}
    Name,
    String,  // text holds the unescaped value
    Int,
    Float,
    Op,  // text holds the operator: "+", "//", "(", ...
    Eof,
};

struct Token {
    Tok type = Tok::Eof;
    std::string text;
    int64_t int_value = 0;
    double float_value = 0;
    Pos pos;
};

struct LexOptions {
    bool trim_blocks = true;
    bool lstrip_blocks = true;
    bool keep_trailing_newline = false;
};

// Throws TemplateError (syntax) with the position of the offending character.
std::vector<Token> tokenize(std::string_view source, const LexOptions& options);

}  // namespace tandem::jinja
