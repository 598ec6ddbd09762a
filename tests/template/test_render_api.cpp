// The public API around the interpreter: context key order, error positions, options. The
// expected strings here are Python facts (json.dumps spacing, dict order), written out by hand.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tandem/template/template.h"

namespace {

using ojson = nlohmann::ordered_json;
using tandem::render_template;

TEST(RenderApi, OrderedContextKeepsKeyOrderLikePythonDicts) {
    ojson ctx = ojson::parse(
        R"({"tool": {"name": "f", "description": "d", "parameters": {"z": 1, "a": 2}}})");
    EXPECT_EQ(render_template("{{ tool|tojson }}", ctx),
              R"({"name": "f", "description": "d", "parameters": {"z": 1, "a": 2}})");
    EXPECT_EQ(render_template("{% for k, v in tool.parameters.items() %}{{ k }}{% endfor %}", ctx),
              "za");
}

TEST(RenderApi, PlainJsonContextSeesSortedKeys) {
    // nlohmann::json stores objects sorted; the overload renders what it was given.
    nlohmann::json ctx = nlohmann::json::parse(R"({"d": {"z": 1, "a": 2}})");
    EXPECT_EQ(render_template("{{ d|tojson }}", ctx), R"({"a": 2, "z": 1})");
}

TEST(RenderApi, SyntaxErrorsCarryLineAndColumn) {
    try {
        render_template("line one\n  {{ 1 + }}", ojson::object());
        FAIL();
    } catch (const tandem::TemplateError& e) {
        EXPECT_EQ(e.line(), 2);
        EXPECT_EQ(e.column(), 10);  // the '}}' where an operand was expected
        EXPECT_NE(std::string(e.what()).find("line 2, column 10"), std::string::npos) << e.what();
    }
    try {
        render_template("héé {% if x %}", ojson::object());
        FAIL();
    } catch (const tandem::TemplateError& e) {
        EXPECT_EQ(e.line(), 1);
        EXPECT_EQ(e.column(), 15);  // columns count characters, not UTF-8 bytes
    }
}

TEST(RenderApi, RuntimeErrorsPointAtTheFailingExpression) {
    try {
        render_template("a\nb\n  {{ x + 1 }}", ojson::object());
        FAIL();
    } catch (const tandem::TemplateError& e) {
        EXPECT_EQ(e.message(), "'x' is undefined");
        EXPECT_EQ(e.line(), 3);
        EXPECT_EQ(e.column(), 6);
    }
}

TEST(RenderApi, TemplateErrorIsATandemError) {
    EXPECT_THROW(render_template("{{ raise_exception('boom') }}", ojson::object()), tandem::Error);
}

TEST(RenderApi, StrftimeNowUsesTheGivenTime) {
    tandem::RenderOptions o;
    std::tm tm{};
    tm.tm_year = 2024 - 1900;
    tm.tm_mon = 6;
    tm.tm_mday = 26;
    tm.tm_hour = 12;
    o.now = std::chrono::system_clock::from_time_t(timegm(&tm));
    EXPECT_EQ(render_template("{{ strftime_now('%d %b %Y') }}", ojson::object(), o), "26 Jul 2024");
}

TEST(RenderApi, OptionsControlWhitespace) {
    const char* src = "  {% if true %}\nx\n{% endif %}\n";
    tandem::RenderOptions hf;  // trim_blocks + lstrip_blocks, trailing newline dropped
    EXPECT_EQ(render_template(src, ojson::object(), hf), "x\n");
    tandem::RenderOptions raw;
    raw.trim_blocks = false;
    raw.lstrip_blocks = false;
    raw.keep_trailing_newline = true;
    EXPECT_EQ(render_template(src, ojson::object(), raw), "  \nx\n\n");
}

TEST(RenderApi, ContextValuesBecomePythonValues) {
    ojson ctx = ojson::parse(R"({"n": 3, "f": 2.5, "b": true, "z": null,
                                  "s": "é", "l": [1, "a"], "d": {"k": [true, null]}})");
    EXPECT_EQ(render_template("{{ n }}|{{ f }}|{{ b }}|{{ z }}|{{ s }}|{{ l }}|{{ d }}", ctx),
              "3|2.5|True|None|é|[1, 'a']|{'k': [True, None]}");
    EXPECT_EQ(
        render_template("{{ n is integer }}{{ f is float }}{{ z is none }}{{ d is mapping }}", ctx),
        "TrueTrueTrueTrue");
}

TEST(RenderApi, EmptyTemplateAndNonObjectContext) {
    EXPECT_EQ(render_template("", ojson::object()), "");
    // A context that is not an object provides no variables (nothing to crash on).
    EXPECT_EQ(render_template("{{ messages is defined }}", ojson::array({1, 2})), "False");
}

}  // namespace

namespace {

TEST(RenderApi, ChatTemplateParsesOnceAndRendersMany) {
    EXPECT_THROW(tandem::ChatTemplate("{% if x %}"), tandem::TemplateError);
    tandem::ChatTemplate t("{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}");
    EXPECT_EQ(t.render(ojson::parse(R"({"messages": [{"role": "user", "content": "a"}]})")),
              "[user:a]");
    EXPECT_EQ(t.render(ojson::parse(R"({"messages": []})")), "");
    // Each render starts from a clean slate: state set by one render is not seen by the next.
    tandem::ChatTemplate counter(
        "{% if seen is defined %}again{% endif %}{% set seen = 1 %}{{ seen }}");
    EXPECT_EQ(counter.render(ojson::object()), "1");
    EXPECT_EQ(counter.render(ojson::object()), "1");
}

TEST(RenderApi, JoinerAndOctalEscapes) {
    EXPECT_EQ(render_template(
                  "{% set c = joiner(', ') %}{% for x in [1, 2, 3] %}{{ c() }}{{ x }}{% endfor %}",
                  ojson::object()),
              "1, 2, 3");
    EXPECT_EQ(render_template(R"({{ '\101\60\7'|length }}{{ '\101' }})", ojson::object()), "3A");
}

}  // namespace

namespace {

TEST(RenderApi, OneChatTemplateRendersFromSeveralThreads) {
    tandem::ChatTemplate t(
        "{% macro row(m) %}{{ m.role|upper }}={{ m.content|trim }}{% endmacro %}"
        "{% set ns = namespace(n=0) %}{% for m in messages %}{{ row(m) }};{% set ns.n = ns.n + 1 %}"
        "{% endfor %}{{ ns.n }}");
    ojson ctx = ojson::parse(
        R"({"messages": [{"role": "user", "content": " a "}, {"role": "assistant", "content": "b"}]})");
    const std::string want = "USER=a;ASSISTANT=b;2";
    ASSERT_EQ(t.render(ctx), want);
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i)
        threads.emplace_back([&] {
            for (int k = 0; k < 200; ++k)
                if (t.render(ctx) != want) ++wrong;
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
