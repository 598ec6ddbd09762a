#pragma once
// Python str operations on UTF-8 text, by code point (whitespace is Python's str.isspace set;
// case mapping covers ASCII and Latin-1, which is what chat templates touch).
#include <cstdint>
#include <string>
#include <vector>

#include "value.h"

namespace tandem::jinja {

std::string py_strip(const std::string& s, const std::string* chars, bool left, bool right);
std::vector<std::string> py_split(const std::string& s, const std::string* sep, int64_t maxsplit,
                                  bool from_right);
std::vector<std::string> py_splitlines(const std::string& s);
std::string py_upper(const std::string& s);
std::string py_lower(const std::string& s);
std::string py_title(const std::string& s);       // str.title()
std::string py_capitalize(const std::string& s);  // str.capitalize()
std::string py_replace(const std::string& s, const std::string& old, const std::string& repl,
                       int64_t count);
int64_t py_count(const std::string& s, const std::string& sub);
std::string py_format(const std::string& fmt,
                      const CallArgs& args);                 // str.format with {} {0} {name}
bool py_is(const std::string& s, const std::string& which);  // isdigit, isalpha, ...
std::string py_pad(const std::string& s, const std::string& how, int64_t width,
                   const std::string& fill);

}  // namespace tandem::jinja
