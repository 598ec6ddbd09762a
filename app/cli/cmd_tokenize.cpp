// tandem-cli tokenize: the token ids of a text, separated by spaces, for a GGUF model or a Hugging
// Face folder. By default BOS/EOS are added as the vocabulary asks and special tokens written in
// the text ("<|im_end|>") become their ids; --no-special turns both off.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "command.h"
#include "tandem/common/error.h"
#include "tandem/tokenizer/tokenizer.h"

namespace {

struct Options {
    std::string model;
    std::string text;
    std::string file;
    bool no_special = false;
};

std::string read_all(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw tandem::Error("tokenize: cannot read --file " + path);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

tandem::cli::Register reg("tokenize", "Print the token ids of a text", [](CLI::App& sub) {
    auto opts = std::make_shared<Options>();
    sub.add_option("-m,--model", opts->model, "GGUF file or Hugging Face folder")->required();
    auto* text = sub.add_option("--text", opts->text, "Text to tokenize");
    auto* file = sub.add_option("--file", opts->file, "File whose bytes to tokenize");
    text->excludes(file);
    sub.add_flag("--no-special", opts->no_special,
                 "Add no BOS/EOS and read special tokens in the text as plain text");
    return [opts, text, file]() -> int {
        if (text->count() == 0 && file->count() == 0)
            throw tandem::Error("tokenize: give --text or --file");
        const std::string input = file->count() ? read_all(opts->file) : opts->text;
        const tandem::tokenizer::Tokenizer tok(tandem::tokenizer::load_model_vocab(opts->model));
        const bool special = !opts->no_special;
        const auto ids = tok.encode(input, special, special);
        std::string line;
        for (size_t i = 0; i < ids.size(); ++i) {
            if (i) line += ' ';
            line += std::to_string(ids[i]);
        }
        std::printf("%s\n", line.c_str());
        return 0;
    };
});

}  // namespace
