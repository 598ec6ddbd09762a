#pragma once
// UTF-8 <-> code points. Python strings index, slice and measure by code point, so templates
// that do `content[0]` or `|length` on non-ASCII text need this. Invalid bytes decode as U+FFFD
// so bad input never breaks rendering.
#include <string>
#include <string_view>

namespace tandem::jinja {

std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
void utf8_append(std::string& out, char32_t cp);
size_t utf8_length(std::string_view s);  // code points

// Python's str.isspace() for one code point.
bool is_py_space(char32_t c);

}  // namespace tandem::jinja
