// Bad templates fail with TemplateError: never a crash, a hang or unbounded memory. Covers the
// caps (steps, call depth, nesting, string size, output size) and a deterministic mutation fuzz
// over the real fixture templates.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "tandem/template/template.h"

namespace {

using ojson = nlohmann::ordered_json;
using tandem::render_template;
using tandem::TemplateError;

ojson chat_context() {
    return ojson::parse(
        R"({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"}, {"role": "user", "content": "more"}],
        "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
}

// Renders; returns "" for TemplateError, fails the test on anything else escaping.
void render_or_template_error(const std::string& src, const ojson& ctx,
                              const tandem::RenderOptions& o) {
    try {
        render_template(src, ctx, o);
    } catch (const TemplateError&) {
    }
}

TEST(Robustness, InfiniteWorkHitsTheStepLimit) {
    tandem::RenderOptions o;
    o.max_steps = 200000;
    auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(
        render_template(
            "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
            ojson::object(), o),
        TemplateError);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(Robustness, DefaultStepLimitStopsQuadraticLoops) {
    auto start = std::chrono::steady_clock::now();
    try {
        render_template(
            "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
            ojson::object());
        FAIL() << "10^10 iterations must not complete";
    } catch (const TemplateError& e) {
        EXPECT_NE(e.message().find("too long"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

TEST(Robustness, UnboundedRecursionHitsTheCallDepthLimit) {
    try {
        render_template("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", ojson::object());
        FAIL() << "infinite recursion must fail";
    } catch (const TemplateError& e) {
        EXPECT_NE(e.message().find("nested deeper"), std::string::npos) << e.what();
    }
    EXPECT_THROW(
        render_template("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}", ojson::object()),
        TemplateError);
}

TEST(Robustness, DeepSyntacticNestingIsASyntaxError) {
    std::string parens = std::string(100000, '(') + "1" + std::string(100000, ')');
    EXPECT_THROW(render_template("{{ " + parens + " }}", ojson::object()), TemplateError);
    std::string lists = std::string(100000, '[') + std::string(100000, ']');
    EXPECT_THROW(render_template("{{ " + lists + " }}", ojson::object()), TemplateError);
    std::string nots;
    for (int i = 0; i < 100000; ++i) nots += "not ";
    EXPECT_THROW(render_template("{{ " + nots + "1 }}", ojson::object()), TemplateError);
    std::string ifs;
    for (int i = 0; i < 10000; ++i) ifs += "{% if true %}";
    EXPECT_THROW(render_template(ifs, ojson::object()), TemplateError);
    std::string neg(100000, '-');
    EXPECT_THROW(render_template("{{ " + neg + "1 }}", ojson::object()), TemplateError);
    // Moderate nesting is fine.
    EXPECT_EQ(render_template("{{ " + std::string(50, '(') + "7" + std::string(50, ')') + " }}",
                              ojson::object()),
              "7");
}

TEST(Robustness, SelfContainingValuesFailCleanly) {
    EXPECT_THROW(
        render_template("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", ojson::object()),
        TemplateError);
    EXPECT_THROW(
        render_template("{% set l = [] %}{% set _ = l.append(l) %}{{ l == l }}{{ l|tojson }}",
                        ojson::object()),
        TemplateError);
}

TEST(Robustness, MemoryBlowupsAreCapped) {
    EXPECT_THROW(
        render_template(
            "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
            "{% endfor %}",
            ojson::object()),
        TemplateError);
    EXPECT_THROW(render_template("{{ 'x' * 10000000000 }}", ojson::object()), TemplateError);
    EXPECT_THROW(render_template("{{ [1] * 10000000000 }}", ojson::object()), TemplateError);
    EXPECT_THROW(render_template("{{ range(100000000)|list|length }}", ojson::object()),
                 TemplateError);
    tandem::RenderOptions o;
    o.max_output_bytes = 1000;
    EXPECT_THROW(
        render_template("{% for i in range(1000) %}0123456789{% endfor %}", ojson::object(), o),
        TemplateError);
    EXPECT_THROW(render_template("{{ 2 ** 100 }}", ojson::object()), TemplateError);
    EXPECT_THROW(render_template("{{ 9223372036854775807 + 1 }}", ojson::object()), TemplateError);
}

TEST(Robustness, MalformedTemplatesRaiseTemplateError) {
    const char* bad[] = {
        "{{",
        "{%",
        "{#",
        "{{ }}",
        "{% %}",
        "{% if %}",
        "{% for %}",
        "{% for x %}",
        "{% for x in %}{% endfor %}",
        "{% set %}",
        "{% set = 1 %}",
        "{% macro %}",
        "{% endfor %}",
        "{% else %}",
        "{% elif x %}",
        "{{ 1 +* 2 }}",
        "{{ a[ }}",
        "{{ a. }}",
        "{{ a | }}",
        "{{ a is }}",
        "{{ {1: } }}",
        "{{ {1 2} }}",
        "{{ 'abc }}",
        "{{ \"abc }}",
        "{{ 1 ]}}",
        "{{ ) }}",
        "{% if x %}{% endfor %}",
        "{% raw %}no end",
        "{{ x @ y }}",
        "{{ f(a=1, 2) }}",
        "{% call %}{% endcall %}",
        "{% filter %}{% endfilter %}",
        "{% set x | %}{% endset %}",
        "{% with %}",
        "{% continue %}",
        "{% for x in y %}{% macro m() %}{% break %}"
        "{% endmacro %}{% endfor %}",
        "{{ 99999999999999999999999 }}",
        "{% extends 'x' %}",
        "{% import 'x' as y %}",
        "\xff\xfe{{ \xff }}",
    };
    for (const char* src : bad) {
        SCOPED_TRACE(src);
        EXPECT_THROW(render_template(src, ojson::object()), TemplateError);
    }
}

TEST(Robustness, MutatedFixtureTemplatesNeverCrash) {
    TANDEM_FIXTURE_OR_SKIP(dir, "chat-templates/templates");
    std::vector<std::string> sources;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        std::ifstream f(entry.path(), std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        sources.push_back(ss.str());
    }
    ASSERT_FALSE(sources.empty());
    std::mt19937 rng(12345);
    const std::string alphabet = "{}%#-+()[]|.,:~'\"\\ \n\tabcxyz019=!<>*/_";
    tandem::RenderOptions o;
    o.max_steps = 100000;
    ojson ctx = chat_context();
    int rendered = 0, failed = 0;
    for (int iter = 0; iter < 1500; ++iter) {
        std::string src = sources[rng() % sources.size()];
        int mutations = 1 + int(rng() % 4);
        for (int m = 0; m < mutations && !src.empty(); ++m) {
            size_t at = rng() % src.size();
            switch (rng() % 4) {
                case 0:
                    src[at] = alphabet[rng() % alphabet.size()];
                    break;
                case 1:
                    src.erase(at, 1 + rng() % 8);
                    break;
                case 2:
                    src.insert(at, 1, alphabet[rng() % alphabet.size()]);
                    break;
                case 3:
                    src.insert(at, src.substr(rng() % src.size(), rng() % 40));
                    break;
            }
        }
        try {
            render_template(src, ctx, o);
            ++rendered;
        } catch (const TemplateError&) {
            ++failed;
        }
    }
    // Both outcomes occur: mutations that keep the syntax valid and ones that break it.
    EXPECT_GT(rendered, 50);
    EXPECT_GT(failed, 50);
}

TEST(Robustness, RandomTokenSoupNeverCrashes) {
    const char* pieces[] = {
        "{{",        "}}",        "{%",    "%}",       "{#",     "#}",      "-",        "+",
        "if",        "for",       "in",    "endif",    "endfor", "set",     "=",        "x",
        "ns",        ".",         "a",     "(",        ")",      "[",       "]",        "{",
        "}",         ",",         ":",     "|",        "length", "is",      "not",      "defined",
        "'s'",       "1",         "2.5",   "~",        "*",      "**",      "//",       "%",
        "else",      "elif",      "macro", "endmacro", "call",   "endcall", "loop",     "namespace",
        "range",     " ",         "\n",    "raw",      "endraw", "break",   "continue", "filter",
        "endfilter", "recursive", "none"};
    std::mt19937 rng(777);
    tandem::RenderOptions o;
    o.max_steps = 20000;
    ojson ctx = chat_context();
    for (int iter = 0; iter < 3000; ++iter) {
        std::string src;
        int n = 1 + int(rng() % 30);
        for (int i = 0; i < n; ++i) src += pieces[rng() % std::size(pieces)];
        render_or_template_error(src, ctx, o);
    }
}

}  // namespace
