#pragma once
// Runs a script of tests/scripts with the reference Python and returns its stdout, so a test
// compares against an independent implementation at run time (nothing precomputed).
#include <cstdio>
#include <string>
#include <vector>

#include "fixtures.h"

namespace tandem::test {

struct ScriptResult {
    int exit_code = -1;
    std::string out;
};

inline std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

inline ScriptResult run_script(const std::string& script, const std::vector<std::string>& args) {
    std::string cmd = shell_quote(python()) + " " +
                      shell_quote((source_dir() / "tests" / "scripts" / script).string());
    for (const auto& a : args) cmd += " " + shell_quote(a);
    ScriptResult r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = ::pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

}  // namespace tandem::test

#define TANDEM_PYTHON_OR_SKIP()           \
    if (::tandem::test::python().empty()) \
    GTEST_SKIP() << "reference Python not found (run packaging/install-deps.sh)"
