#pragma once
// Runs template cases through Python Jinja2 (jinja_reference.py, configured like transformers'
// apply_chat_template) and compares our rendering with it: identical output, or TemplateError
// where Jinja2 raised.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tandem::test {

struct JinjaCase {
    std::string tmpl;
    nlohmann::ordered_json context = nlohmann::ordered_json::object();
    bool trim_blocks = true;
    bool lstrip_blocks = true;
};

struct JinjaComparison {
    bool skipped = false;  // no Python with jinja2
    int outputs = 0;       // cases Jinja2 rendered (and we matched or a failure was added)
    int errors = 0;        // cases Jinja2 raised on
    int uncomparable = 0;  // Jinja2 printed an object address (a lazy generator)
};

// Adds a gtest failure for every mismatching case; names cases by index and template text.
JinjaComparison compare_with_jinja2(const std::vector<JinjaCase>& cases);

}  // namespace tandem::test
