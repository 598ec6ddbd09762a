#include "vector_files.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tandem::test {

std::string read_file(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + path.string());
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::vector<TokenizerCase> read_tokenizer_cases(const std::filesystem::path& inp) {
    const std::string sep = "\n__ggml_vocab_test__\n";
    const std::string in = read_file(inp);
    std::vector<TokenizerCase> cases;
    for (size_t pos = 0; pos < in.size();) {
        const size_t end = in.find(sep, pos);
        if (end == std::string::npos)
            throw std::runtime_error(inp.string() + ": unterminated case");
        cases.push_back({in.substr(pos, end - pos), {}});
        pos = end + sep.size();
    }
    std::filesystem::path out = inp;
    out.replace_extension(".out");
    std::istringstream lines(read_file(out));
    std::string line;
    size_t i = 0;
    for (; std::getline(lines, line); ++i) {
        if (i >= cases.size()) throw std::runtime_error(out.string() + ": more lines than cases");
        std::istringstream ids(line);
        int32_t id;
        while (ids >> id) cases[i].ids.push_back(id);
    }
    if (i != cases.size())
        throw std::runtime_error(out.string() + ": " + std::to_string(i) + " lines for " +
                                 std::to_string(cases.size()) + " cases");
    return cases;
}

}  // namespace tandem::test
