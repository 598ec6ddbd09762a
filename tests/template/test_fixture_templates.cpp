// Real chat templates of public models rendered by Jinja2 3.1 the way transformers does
// (../shared/fixtures/chat-templates/expected.json): every rendering must match byte for byte,
// and every case where Jinja2 raised must raise TemplateError.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "tandem/template/template.h"

namespace {

using ojson = nlohmann::ordered_json;

std::string read_file(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// The fixture fixed strftime_now to 2026-01-15; noon UTC keeps that date in any time zone
// within +-11 hours of UTC.
tandem::RenderOptions fixture_options() {
    tandem::RenderOptions o;
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 0;
    tm.tm_mday = 15;
    tm.tm_hour = 12;
    o.now = std::chrono::system_clock::from_time_t(timegm(&tm));
    return o;
}

// The first byte where two strings differ, with some context, for a readable failure.
std::string first_difference(const std::string& a, const std::string& b) {
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    size_t from = i > 40 ? i - 40 : 0;
    return "first difference at byte " + std::to_string(i) +
           "\n  expected: " + ojson(a.substr(from, 100)).dump() +
           "\n  actual:   " + ojson(b.substr(from, 100)).dump();
}

TEST(FixtureTemplates, EveryRenderingMatchesJinja2) {
    TANDEM_FIXTURE_OR_SKIP(dir, "chat-templates");
    ojson expected = ojson::parse(read_file(dir / "expected.json"));
    const auto& cases = expected.at("cases");
    ASSERT_GE(cases.size(), 60u);
    int rendered = 0, raised = 0;
    for (const auto& c : cases) {
        std::string name =
            c.at("template").get<std::string>() + " / " + c.at("case").get<std::string>();
        SCOPED_TRACE(name);
        std::string source = read_file(dir / "templates" / c.at("template").get<std::string>());
        ASSERT_FALSE(source.empty());
        if (!c.at("error").is_null()) {
            EXPECT_THROW(tandem::render_template(source, c.at("context"), fixture_options()),
                         tandem::TemplateError)
                << "Jinja2 raised: " << c.at("error").get<std::string>();
            ++raised;
            continue;
        }
        std::string want = c.at("expected").get<std::string>();
        std::string got;
        try {
            got = tandem::render_template(source, c.at("context"), fixture_options());
        } catch (const tandem::TemplateError& e) {
            ADD_FAILURE() << "unexpected error: " << e.what();
            continue;
        }
        EXPECT_EQ(got, want) << first_difference(want, got);
        if (got == want) ++rendered;
    }
    // 5 error cases in the fixture (firefunction needs `functions`, Gemma refuses system).
    EXPECT_EQ(raised, 5);
    EXPECT_EQ(rendered + raised, int(cases.size()));
}

TEST(FixtureTemplates, RaiseExceptionMessageAndPositionReachTheCaller) {
    TANDEM_FIXTURE_OR_SKIP(dir, "chat-templates/templates/google-gemma-2-2b-it.jinja");
    ojson ctx = {{"messages",
                  {{{"role", "system"}, {"content", "x"}}, {{"role", "user"}, {"content", "y"}}}},
                 {"bos_token", "<s>"}};
    try {
        tandem::render_template(read_file(dir), ctx, fixture_options());
        FAIL() << "Gemma 2's template refuses a system message";
    } catch (const tandem::TemplateError& e) {
        EXPECT_EQ(e.message(), "System role not supported");
        EXPECT_EQ(e.line(), 1);
        EXPECT_GT(e.column(), 1);
    }
}

TEST(FixtureTemplates, UndefinedInArithmeticNamesTheVariable) {
    TANDEM_FIXTURE_OR_SKIP(dir,
                           "chat-templates/templates/fireworks-ai-llama-3-firefunction-v2.jinja");
    ojson ctx = {{"messages", {{{"role", "user"}, {"content", "y"}}}}, {"bos_token", "<s>"}};
    try {
        tandem::render_template(read_file(dir), ctx, fixture_options());
        FAIL() << "`functions` is not defined";
    } catch (const tandem::TemplateError& e) {
        EXPECT_EQ(e.message(), "'functions' is undefined");
        EXPECT_EQ(e.line(), 21);
    }
}

}  // namespace
