#include "jinja2_reference.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "fixtures.h"
#include "tandem/template/template.h"

namespace tandem::test {
namespace {

using ojson = nlohmann::ordered_json;

std::string read_file(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// jinja_reference.py fixes strftime_now to 2026-01-15 12:00 local time; so do we.
RenderOptions reference_options(const JinjaCase& c) {
    RenderOptions o;
    o.trim_blocks = c.trim_blocks;
    o.lstrip_blocks = c.lstrip_blocks;
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 0;
    tm.tm_mday = 15;
    tm.tm_hour = 12;
    tm.tm_isdst = -1;
    o.now = std::chrono::system_clock::from_time_t(std::mktime(&tm));
    return o;
}

}  // namespace

JinjaComparison compare_with_jinja2(const std::vector<JinjaCase>& cases) {
    JinjaComparison result;
    std::string py = python();
    if (py.empty() || std::system(("'" + py + "' -c 'import jinja2' 2>/dev/null").c_str()) != 0) {
        result.skipped = true;  // no Python, or no jinja2 in it
        return result;
    }
    auto script = source_dir() / "tests" / "template" / "jinja_reference.py";
    EXPECT_TRUE(std::filesystem::exists(script)) << script;
    auto dir = temp_dir("jinja2");
    ojson input = ojson::array();
    for (const auto& c : cases)
        input.push_back({{"template", c.tmpl},
                         {"context", c.context},
                         {"trim_blocks", c.trim_blocks},
                         {"lstrip_blocks", c.lstrip_blocks}});
    std::ofstream(dir / "in.json") << input.dump();
    std::string cmd = "'" + py + "' '" + script.string() + "' '" + (dir / "in.json").string() +
                      "' '" + (dir / "out.json").string() + "'";
    if (std::system(cmd.c_str()) != 0) {
        ADD_FAILURE() << "reference renderer failed: " << cmd;
        return result;
    }
    ojson refs = ojson::parse(read_file(dir / "out.json"));
    if (refs.size() != cases.size()) {
        ADD_FAILURE() << "reference renderer returned " << refs.size() << " results for "
                      << cases.size() << " cases";
        return result;
    }
    for (size_t i = 0; i < cases.size(); ++i) {
        const JinjaCase& c = cases[i];
        SCOPED_TRACE("case " + std::to_string(i) + ": " + ojson(c.tmpl).dump().substr(0, 300) +
                     " with " + c.context.dump().substr(0, 300));
        const auto& ref = refs[i];
        if (ref.contains("error")) {
            ++result.errors;
            if (std::getenv("TANDEM_JINJA_VERBOSE"))  // to see what the generated cases hit
                std::printf("jinja2 error: %s\n", ref["error"].get<std::string>().c_str());
            try {
                std::string got = render_template(c.tmpl, c.context, reference_options(c));
                ADD_FAILURE() << "Jinja2 raised " << ref["error"].get<std::string>()
                              << " but we rendered " << ojson(got).dump();
            } catch (const TemplateError&) {
            }
            continue;
        }
        // A lazy generator printed as "<generator object ... at 0x...>" cannot be compared.
        if (ref["output"].get<std::string>().find(" object at 0x") != std::string::npos) {
            ++result.uncomparable;
            continue;
        }
        ++result.outputs;
        try {
            std::string got = render_template(c.tmpl, c.context, reference_options(c));
            EXPECT_EQ(ojson(got).dump(), ojson(ref["output"].get<std::string>()).dump());
            if (std::getenv("TANDEM_JINJA_VERBOSE") && got != ref["output"].get<std::string>())
                std::printf("mismatch template: %s\n", ojson(c.tmpl).dump().c_str());
        } catch (const TemplateError& e) {
            ADD_FAILURE() << "we raised " << e.what() << " but Jinja2 rendered "
                          << ref["output"].dump();
        }
    }
    return result;
}

}  // namespace tandem::test
