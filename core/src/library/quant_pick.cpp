#include "tandem/library/quant_pick.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>

#include "tandem/common/error.h"

namespace tandem::library {
namespace {

std::string upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return char(std::toupper(c)); });
    return s;
}

std::string basename_of(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool ends_with_gguf(const std::string& name) {
    return name.size() > 5 && upper(name.substr(name.size() - 5)) == ".GGUF";
}

const std::regex& split_re() {
    static const std::regex re(R"(^(.*)-(\d{5})-of-(\d{5})\.gguf$)", std::regex::icase);
    return re;
}

// Quant tags as llama.cpp's quantize names them (plus the float types and Unsloth's UD- prefix).
const std::regex& quant_re() {
    static const std::regex re(
        R"(^(UD-)?(I?Q[1-8](_[0-9A-Z]+)*|TQ[12]_0|MXFP4(_MOE)?|BF16|F16|FP16|F32|FP32)$)",
        std::regex::icase);
    return re;
}

}  // namespace

ModelSpec ModelSpec::parse(const std::string& spec) {
    ModelSpec m;
    std::string rest = spec;
    // "hf.co/owner/name" and "https://huggingface.co/owner/name" are accepted as well.
    for (const char* prefix : {"https://huggingface.co/", "hf.co/", "huggingface.co/"})
        if (rest.rfind(prefix, 0) == 0) rest = rest.substr(std::string(prefix).size());
    if (auto colon = rest.rfind(':'); colon != std::string::npos) {
        m.quant = rest.substr(colon + 1);
        rest = rest.substr(0, colon);
    }
    if (auto at = rest.find('@'); at != std::string::npos) {
        m.revision = rest.substr(at + 1);
        rest = rest.substr(0, at);
    }
    auto slash = rest.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size() ||
        rest.find('/', slash + 1) != std::string::npos || m.revision.empty())
        throw Error("model spec '" + spec + "': expected owner/name[@revision][:QUANT]");
    m.repo = rest;
    return m;
}

uint64_t QuantGroup::total_size() const {
    uint64_t t = 0;
    for (const auto& f : files) t += f.size;
    return t;
}

std::optional<std::string> quant_from_filename(const std::string& filename) {
    std::string name = basename_of(filename);
    std::smatch m;
    if (std::regex_match(name, m, split_re())) {
        name = m[1].str();
    } else if (ends_with_gguf(name)) {
        name = name.substr(0, name.size() - 5);
    }
    // Tags are separated by '-' or '.'; the last one that looks like a quant wins
    // ("Qwen2.5-7B-Instruct-Q4_K_M", "model.Q8_0", "gemma-UD-Q4_K_XL").
    std::vector<std::string> tokens;
    std::string cur;
    for (char c : name) {
        if (c == '-' || c == '.') {
            tokens.push_back(cur);
            cur.clear();
        } else {
            cur.push_back(c);
        }
    }
    tokens.push_back(cur);
    for (size_t i = tokens.size(); i-- > 0;) {
        if (std::regex_match(tokens[i], quant_re())) {
            std::string q = upper(tokens[i]);
            if (i > 0 && upper(tokens[i - 1]) == "UD") q = "UD-" + q;
            return q;
        }
    }
    return std::nullopt;
}

std::vector<QuantGroup> group_gguf_files(const std::vector<RepoFile>& files) {
    struct Part {
        uint32_t index;
        RepoFile file;
    };
    struct Acc {
        std::string quant;
        uint32_t count = 1;
        std::vector<Part> parts;
    };
    std::map<std::string, Acc> groups;  // key: folder + name without the split suffix
    for (const auto& f : files) {
        std::string base = basename_of(f.path);
        if (!ends_with_gguf(base)) continue;
        std::string lower = base;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return char(std::tolower(c)); });
        if (lower.find("mmproj") != std::string::npos) continue;  // vision projectors
        std::string key = f.path;
        uint32_t index = 1, count = 1;
        std::smatch m;
        std::string folder = f.path.substr(0, f.path.size() - base.size());
        if (std::regex_match(base, m, split_re())) {
            key = folder + m[1].str();
            index = uint32_t(std::stoul(m[2].str()));
            count = uint32_t(std::stoul(m[3].str()));
        }
        auto& g = groups[key];
        if (g.parts.empty()) {
            auto q = quant_from_filename(base);
            g.quant = q ? *q : key.substr(folder.size());
            if (!q && ends_with_gguf(g.quant)) g.quant = g.quant.substr(0, g.quant.size() - 5);
            g.count = count;
        }
        g.parts.push_back({index, f});
    }
    std::vector<QuantGroup> out;
    for (auto& [key, g] : groups) {
        std::sort(g.parts.begin(), g.parts.end(),
                  [](const Part& a, const Part& b) { return a.index < b.index; });
        QuantGroup q;
        q.quant = g.quant;
        q.split_count = g.count;
        for (auto& p : g.parts) q.files.push_back(p.file);
        out.push_back(std::move(q));
    }
    return out;
}

const QuantGroup& pick_quant(const std::vector<QuantGroup>& groups, const std::string& quant,
                             const std::string& repo) {
    auto available = [&] {
        std::vector<std::string> names;
        for (const auto& g : groups) names.push_back(g.quant);
        std::sort(names.begin(), names.end());
        std::string s;
        for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
        return s.empty() ? std::string("none") : s;
    };
    if (groups.empty()) throw Error("hf: " + repo + " has no GGUF files");
    const QuantGroup* found = nullptr;
    std::string want = upper(quant.empty() ? "Q4_K_M" : quant);
    for (const auto& g : groups)
        if (upper(g.quant) == want) {
            found = &g;
            break;
        }
    if (!found && quant.empty() && groups.size() == 1) found = &groups.front();
    if (!found) {
        throw Error("hf: " + repo + ": " +
                    (quant.empty()
                         ? std::string("several quantizations, pick one with ") + repo + ":QUANT"
                         : "no GGUF with quantization '" + quant + "'") +
                    " (available: " + available() + ")");
    }
    if (!found->complete())
        throw Error("hf: " + repo + ": split GGUF " + found->quant + " lists " +
                    std::to_string(found->files.size()) + " of " +
                    std::to_string(found->split_count) + " parts");
    return *found;
}

}  // namespace tandem::library
