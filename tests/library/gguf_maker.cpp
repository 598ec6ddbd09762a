#include "gguf_maker.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fixtures.h"

namespace tandem::test {

std::optional<MadeGguf> make_gguf(const std::filesystem::path& out, const std::string& args) {
    auto py = python();
    if (py.empty()) return std::nullopt;
    std::filesystem::create_directories(out.parent_path());
    auto script = source_dir() / "tests" / "library" / "make_test_gguf.py";
    std::string cmd = "'" + py + "' '" + script.string() + "' '" + out.string() + "' " + args;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) throw std::runtime_error("cannot run " + cmd);
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
    if (::pclose(p) != 0) throw std::runtime_error("failed: " + cmd);
    auto j = nlohmann::json::parse(text);
    MadeGguf m;
    for (const auto& s : j["parts"]) m.parts.emplace_back(s.get<std::string>());
    m.parameters = j["parameters"].get<uint64_t>();
    for (auto it = j["quant_mix"].begin(); it != j["quant_mix"].end(); ++it)
        m.quant_mix[it.key()] = it.value().get<uint64_t>();
    for (const auto& s : j["sizes"]) m.total_size += s.get<uint64_t>();
    return m;
}

}  // namespace tandem::test
