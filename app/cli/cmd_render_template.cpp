// tandem-cli render-template: renders a chat template over a JSON file of template variables and
// prints the result exactly (no newline added). With -m the template is the model's own
// (GGUF tokenizer.chat_template) and bos_token/eos_token come from its vocabulary unless the
// file sets them.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "command.h"
#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"
#include "tandem/template/template.h"

namespace {

struct Options {
    std::string model;
    std::string template_file;
    std::string messages_json;
    std::string template_name;
};

std::string read_all(const std::string& path, const char* what) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw tandem::Error("render-template: cannot read " + std::string(what) + " " + path);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// The vocabulary entry a special-token id key points at, or "" when the model has none.
std::string special_token(const tandem::gguf::File& f, const std::string& id_key) {
    const tandem::gguf::Value* id = f.find(id_key);
    if (!id) return "";
    const tandem::gguf::Value* tokens = f.find("tokenizer.ggml.tokens");
    if (!tokens || !tokens->is_array())
        throw tandem::Error("render-template: " + f.path().string() + ": " + id_key +
                            " is set but tokenizer.ggml.tokens is missing");
    const auto& items = tokens->as_array().items;
    uint64_t i = id->as_u64();
    if (i >= items.size())
        throw tandem::Error("render-template: " + f.path().string() + ": " + id_key + " = " +
                            std::to_string(i) + " is past the vocabulary (" +
                            std::to_string(items.size()) + " tokens)");
    return items[i].as_string();
}

tandem::cli::Register reg(
    "render-template", "Render a chat template over messages and print the prompt text",
    [](CLI::App& sub) {
        auto opts = std::make_shared<Options>();
        auto* model = sub.add_option("-m,--model", opts->model,
                                     "GGUF model whose tokenizer.chat_template to use");
        auto* file =
            sub.add_option("--template-file", opts->template_file, "Jinja2 chat template file");
        model->excludes(file);
        sub.add_option("--messages-json", opts->messages_json,
                       "JSON object: messages and any other template variables")
            ->required();
        sub.add_option("--template-name", opts->template_name,
                       "With -m: a named template (tokenizer.chat_template.NAME), e.g. tool_use");
        return [opts, model, file]() -> int {
            if (model->count() == 0 && file->count() == 0)
                throw tandem::Error("render-template: give -m MODEL or --template-file F");
            nlohmann::ordered_json context;
            try {
                context =
                    nlohmann::ordered_json::parse(read_all(opts->messages_json, "--messages-json"));
            } catch (const nlohmann::json::exception& e) {
                throw tandem::Error("render-template: " + opts->messages_json +
                                    ": invalid JSON: " + e.what());
            }
            if (!context.is_object())
                throw tandem::Error("render-template: " + opts->messages_json +
                                    ": expected a JSON object with \"messages\"");

            std::string source;
            if (model->count()) {
                auto f = tandem::gguf::File::open(opts->model, {.map_all = false});
                std::string key = "tokenizer.chat_template";
                if (!opts->template_name.empty()) key += "." + opts->template_name;
                if (!f.find(key))
                    throw tandem::Error("render-template: " + opts->model + " has no " + key);
                source = f.get_string(key);
                // The file wins where it sets a variable; the model fills what it leaves out.
                if (!context.contains("bos_token"))
                    context["bos_token"] = special_token(f, "tokenizer.ggml.bos_token_id");
                if (!context.contains("eos_token"))
                    context["eos_token"] = special_token(f, "tokenizer.ggml.eos_token_id");
            } else {
                source = read_all(opts->template_file, "--template-file");
            }
            std::string out = tandem::render_template(source, context, tandem::RenderOptions{});
            std::fwrite(out.data(), 1, out.size(), stdout);
            std::fflush(stdout);
            return 0;
        };
    });

}  // namespace
