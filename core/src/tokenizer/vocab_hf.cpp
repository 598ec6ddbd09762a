// Vocabulary from a Hugging Face tokenizer folder. Token types follow llama.cpp's converter:
// added tokens that are special (or look special, "<|...|>") are Control, other added tokens are
// UserDefined, "<0xNN>" tokens of SentencePiece-style vocabularies are Byte.
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "tandem/common/error.h"
#include "tandem/tokenizer/vocab.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/sentencepiece_model.h"
#include "tokenizer/vocab_finish.h"

namespace tandem::tokenizer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) throw Error("tokenizer: cannot read " + p.string());
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

json read_json(const fs::path& p) {
    try {
        return json::parse(read_text(p));
    } catch (const json::exception& e) {
        throw Error("tokenizer: " + p.string() + ": not valid JSON: " + e.what());
    }
}

// Runs f, turning a JSON type error (a field of the wrong type) into an Error naming the file.
template <typename F>
void reading(const fs::path& p, F&& f) {
    try {
        f();
    } catch (const json::exception& e) {
        throw Error("tokenizer: " + p.string() + ": unexpected content: " + e.what());
    }
}

// A special-token field of tokenizer_config.json / special_tokens_map.json: a string, an
// AddedToken object {"content": ...}, or null.
std::string token_text(const json& j) {
    if (j.is_string()) return j.get<std::string>();
    if (j.is_object() && j.contains("content") && j["content"].is_string())
        return j["content"].get<std::string>();
    return {};
}

bool looks_special(const std::string& t) {
    const auto wrapped = [&](std::string_view open, std::string_view close) {
        return t.size() >= open.size() + close.size() && t.starts_with(open) && t.ends_with(close);
    };
    return t == "<pad>" || t == "<mask>" || wrapped("<|", "|>") || wrapped("<｜", "｜>") ||
           wrapped("<unused", ">");
}

// Puts token text at id, growing the vocabulary with unused padding tokens as llama.cpp's
// converter does when added ids leave a gap.
void place(Vocab& v, size_t id, const std::string& text, TokenType type) {
    if (id > 10'000'000) throw Error("tokenizer: token id " + std::to_string(id) + " too large");
    while (v.tokens.size() <= id) {
        v.tokens.push_back("[PAD" + std::to_string(v.tokens.size()) + "]");
        v.types.push_back(TokenType::Unused);
    }
    v.tokens[id] = text;
    v.types[id] = type;
}

void read_token_map(Vocab& v, const json& map, const fs::path& src) {
    if (!map.is_object())
        throw Error("tokenizer: " + src.string() + ": vocabulary is not an object");
    for (const auto& [text, id] : map.items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0)
            throw Error("tokenizer: " + src.string() + ": token '" + text + "' has no valid id");
        place(v, size_t(id.get<int64_t>()), text, TokenType::Normal);
    }
}

void read_merges_txt(Vocab& v, const fs::path& p) {
    std::istringstream in(read_text(p));
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line.starts_with("#version")) continue;
        v.merges.push_back(line);
    }
}

// The regexes of a tokenizer.json pre_tokenizer, in order.
void collect_regexes(const json& pt, std::vector<std::string>& out, const fs::path& src) {
    if (!pt.is_object()) return;
    const std::string type = pt.value("type", "");
    if (type == "Sequence") {
        for (const auto& p : pt.value("pretokenizers", json::array())) collect_regexes(p, out, src);
    } else if (type == "Split") {
        const json& pattern = pt.value("pattern", json::object());
        if (pattern.contains("Regex"))
            out.push_back(pattern["Regex"].get<std::string>());
        else
            throw Error("tokenizer: " + src.string() + ": Split pre-tokenizer without a regex");
    } else if (type == "ByteLevel") {
        if (pt.value("use_regex", true)) out.push_back(pre_tokenizer_regexes("gpt-2").front());
    } else if (type == "Digits") {
        out.push_back(pt.value("individual_digits", false) ? "\\p{N}" : "\\p{N}+");
    } else if (!type.empty() && type != "Metaspace") {
        throw Error("tokenizer: " + src.string() + ": pre-tokenizer type '" + type +
                    "' is not supported");
    }
}

std::string pre_from_regexes(const std::vector<std::string>& regexes, const fs::path& src) {
    if (regexes.empty())
        throw Error("tokenizer: " + src.string() + ": byte-level BPE without a pre-tokenizer");
    // Preference order: names as llama.cpp's converter writes them.
    static const char* kNames[] = {"llama-bpe",      "qwen2",  "gpt-2",     "deepseek-llm",
                                   "deepseek-coder", "falcon", "starcoder", "default",
                                   "poro-chat",      "viking", "tekken",    "gpt-4o"};
    for (const char* name : kNames)
        if (pre_tokenizer_regexes(name) == regexes) return name;
    std::string list;
    for (const auto& r : regexes) list += "\n  " + r;
    throw Error("tokenizer: " + src.string() + ": pre-tokenizer regexes not recognised:" + list);
}

// Without tokenizer.json: the vocabulary families whose files have no pre-tokenizer, recognised
// by their first merges (the merges list is the family's fingerprint).
std::string pre_from_fingerprint(const Vocab& v, const std::string& tokenizer_class) {
    if (tokenizer_class == "Qwen2Tokenizer" || tokenizer_class == "Qwen2TokenizerFast")
        return "qwen2";
    if (tokenizer_class == "GPT2Tokenizer" || tokenizer_class == "GPT2TokenizerFast")
        return "gpt-2";
    const auto starts = [&](std::initializer_list<const char*> first) {
        if (v.merges.size() < first.size()) return false;
        size_t i = 0;
        for (const char* m : first)
            if (v.merges[i++] != m) return false;
        return true;
    };
    if (starts({"Ġ Ġ", "Ġ ĠĠĠ", "ĠĠ ĠĠ", "ĠĠĠ Ġ", "i n"})) return "llama-bpe";
    if (starts({"Ġ Ġ", "ĠĠ ĠĠ", "i n", "Ġ t"})) return "qwen2";
    if (starts({"Ġ t", "Ġ a", "h e", "i n"})) return "gpt-2";
    return {};
}

int32_t id_of(const Vocab& v, const std::string& text) {
    if (text.empty()) return -1;
    for (size_t i = 0; i < v.tokens.size(); ++i)
        if (v.tokens[i] == text) return int32_t(i);
    return -1;
}

// BOS/EOS that the post-processor wraps around every sequence (TemplateProcessing, possibly
// inside a Sequence): Llama 3's tokenizer.json adds <|begin_of_text|> this way.
void read_post_processor(Vocab& v, const json& pp) {
    if (!pp.is_object()) return;
    const std::string type = pp.value("type", "");
    if (type == "Sequence") {
        for (const auto& p : pp.value("processors", json::array())) read_post_processor(v, p);
        return;
    }
    if (type != "TemplateProcessing") return;
    const json& single = pp.value("single", json::array());
    if (!single.is_array() || single.empty()) return;
    const auto special_id = [&](const json& item) -> int32_t {
        if (!item.is_object() || !item.contains("SpecialToken")) return -1;
        return id_of(v, item["SpecialToken"].value("id", ""));
    };
    if (const int32_t bos = special_id(single.front()); bos >= 0) {
        v.add_bos = true;
        v.bos_id = bos;
    }
    if (const int32_t eos = special_id(single.back()); eos >= 0 && single.size() > 1) {
        v.add_eos = true;
        v.eos_id = eos;
    }
}

void read_tokenizer_json(Vocab& v, const fs::path& p) {
    const json j = read_json(p);
    const json& model = j.value("model", json::object());
    const std::string type = model.value("type", "BPE");
    if (type != "BPE")
        throw Error("tokenizer: " + p.string() + ": model type '" + type +
                    "' is not supported (BPE only)");
    read_token_map(v, model.value("vocab", json::object()), p);
    for (const auto& m : model.value("merges", json::array())) {
        if (m.is_string())
            v.merges.push_back(m.get<std::string>());
        else if (m.is_array() && m.size() == 2)
            v.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
        else
            throw Error("tokenizer: " + p.string() + ": malformed merge " + m.dump());
    }
    // SentencePiece-style BPE (Llama 2, Gemma as tokenizer.json): spaces are U+2581, unknown
    // bytes fall back to <0xNN>. Merge ranks become scores so the highest-score merge is the
    // lowest-rank one.
    const bool spm =
        model.value("byte_fallback", false) ||
        j.value("decoder", json::object()).dump().find("\\u2581") != std::string::npos ||
        j.value("decoder", json::object()).dump().find("▁") != std::string::npos;
    if (spm) {
        v.model = ModelKind::Spm;
        v.scores.assign(v.tokens.size(), 0.0f);
        std::map<std::string, size_t> first_rank;
        for (size_t r = 0; r < v.merges.size(); ++r) {
            const std::string& m = v.merges[r];
            const size_t sp = m.find(' ', 1);
            if (sp == std::string::npos) continue;
            first_rank.emplace(m.substr(0, sp) + m.substr(sp + 1), r);
        }
        for (size_t id = 0; id < v.tokens.size(); ++id) {
            auto it = first_rank.find(v.tokens[id]);
            if (it != first_rank.end()) v.scores[id] = -float(it->second) - 1.0f;
            if (v.tokens[id].size() == 6 && v.tokens[id].starts_with("<0x"))
                v.types[id] = TokenType::Byte;
        }
        v.merges.clear();
        const std::string norm = j.value("normalizer", json::object()).dump();
        const std::string pre = j.value("pre_tokenizer", json::object()).dump();
        v.add_space_prefix = norm.find("\"Prepend\"") != std::string::npos ||
                             (pre.find("Metaspace") != std::string::npos &&
                              pre.find("\"never\"") == std::string::npos);
    } else {
        v.model = ModelKind::Bpe;
        std::vector<std::string> regexes;
        collect_regexes(j.value("pre_tokenizer", json::object()), regexes, p);
        v.pre = pre_from_regexes(regexes, p);
    }
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
        const std::string unk = model["unk_token"].get<std::string>();
        for (size_t id = 0; id < v.tokens.size(); ++id)
            if (v.tokens[id] == unk) {
                v.unk_id = int32_t(id);
                v.types[id] = TokenType::Unknown;
            }
    }
    for (const auto& t : j.value("added_tokens", json::array())) {
        const std::string text = t.value("content", "");
        const auto id = t.value("id", int64_t(-1));
        if (id < 0 || text.empty()) throw Error("tokenizer: " + p.string() + ": bad added token");
        const bool special = t.value("special", false) || looks_special(text);
        if (size_t(id) < v.types.size() && v.types[size_t(id)] == TokenType::Unknown) continue;
        place(v, size_t(id), text, special ? TokenType::Control : TokenType::UserDefined);
        if (!v.scores.empty()) v.scores.resize(v.tokens.size(), 0.0f);
    }
    read_post_processor(v, j.value("post_processor", json::object()));
}

// One of tokenizer_config.json / special_tokens_map.json.
void read_config_file(Vocab& v, const json& j, const fs::path& p, std::string& tokenizer_class) {
    if (j.contains("added_tokens_decoder")) {
        for (const auto& [key, t] : j["added_tokens_decoder"].items()) {
            size_t id;
            try {
                id = std::stoul(key);
            } catch (const std::exception&) {
                throw Error("tokenizer: " + p.string() + ": added_tokens_decoder key '" + key +
                            "' is not an id");
            }
            const std::string text = token_text(t);
            if (text.empty()) continue;
            const bool special = t.value("special", false) || looks_special(text);
            if (id < v.types.size() && v.tokens[id] == text && v.types[id] == TokenType::Unknown)
                continue;
            place(v, id, text, special ? TokenType::Control : TokenType::UserDefined);
        }
        if (!v.scores.empty()) v.scores.resize(v.tokens.size(), 0.0f);
    }
    const struct {
        const char* key;
        int32_t Vocab::*field;
    } ids[] = {{"bos_token", &Vocab::bos_id},
               {"eos_token", &Vocab::eos_id},
               {"unk_token", &Vocab::unk_id},
               {"pad_token", &Vocab::pad_id}};
    for (const auto& k : ids) {
        if (!j.contains(k.key)) continue;
        const std::string text = token_text(j[k.key]);
        if (text.empty()) continue;
        const int32_t id = id_of(v, text);
        if (id < 0)
            throw Error("tokenizer: " + p.string() + ": " + k.key + " '" + text +
                        "' is not in the vocabulary");
        v.*k.field = id;
    }
    if (j.contains("add_bos_token") && j["add_bos_token"].is_boolean())
        v.add_bos = j["add_bos_token"].get<bool>();
    if (j.contains("add_eos_token") && j["add_eos_token"].is_boolean())
        v.add_eos = j["add_eos_token"].get<bool>();
    if (j.contains("tokenizer_class") && j["tokenizer_class"].is_string())
        tokenizer_class = j["tokenizer_class"].get<std::string>();
    if (j.contains("chat_template")) {
        const json& ct = j["chat_template"];
        if (ct.is_string()) {
            v.chat_template = ct.get<std::string>();
        } else if (ct.is_array()) {  // named templates: the "default" one
            for (const auto& t : ct)
                if (t.value("name", "") == "default") v.chat_template = t.value("template", "");
        }
    }
}

void read_tokenizer_config(Vocab& v, const fs::path& folder, std::string& tokenizer_class) {
    // special_tokens_map.json first; tokenizer_config.json overrides.
    for (const char* name : {"special_tokens_map.json", "tokenizer_config.json"}) {
        const fs::path p = folder / name;
        if (!fs::exists(p)) continue;
        const json j = read_json(p);
        if (!j.is_object()) throw Error("tokenizer: " + p.string() + ": not a JSON object");
        reading(p, [&] { read_config_file(v, j, p, tokenizer_class); });
    }
    // Newer transformers keep the template in its own file.
    if (v.chat_template.empty() && fs::exists(folder / "chat_template.jinja"))
        v.chat_template = read_text(folder / "chat_template.jinja");
}

}  // namespace

bool has_hf_vocab(const fs::path& folder) {
    return fs::exists(folder / "tokenizer.json") || fs::exists(folder / "tokenizer.model") ||
           (fs::exists(folder / "vocab.json") && fs::exists(folder / "merges.txt")) ||
           (fs::exists(folder / "encoder.json") && fs::exists(folder / "vocab.bpe"));
}

Vocab load_hf_vocab(const fs::path& folder, const std::string& pre) {
    Vocab v;
    v.add_space_prefix = false;
    std::string tokenizer_class;
    bool pre_known = false;  // the files name the pre-tokenizer (or need none)
    if (fs::exists(folder / "tokenizer.json")) {
        reading(folder / "tokenizer.json",
                [&] { read_tokenizer_json(v, folder / "tokenizer.json"); });
        pre_known = true;
    } else if (fs::exists(folder / "vocab.json") && fs::exists(folder / "merges.txt")) {
        reading(folder / "vocab.json", [&] {
            read_token_map(v, read_json(folder / "vocab.json"), folder / "vocab.json");
        });
        read_merges_txt(v, folder / "merges.txt");
    } else if (fs::exists(folder / "encoder.json") && fs::exists(folder / "vocab.bpe")) {
        reading(folder / "encoder.json", [&] {
            read_token_map(v, read_json(folder / "encoder.json"), folder / "encoder.json");
        });
        read_merges_txt(v, folder / "vocab.bpe");
    } else if (fs::exists(folder / "tokenizer.model")) {
        read_sentencepiece_model(v, folder / "tokenizer.model");
        pre_known = true;
    } else {
        throw Error("tokenizer: " + folder.string() +
                    ": no tokenizer.json, vocab.json + merges.txt, encoder.json + vocab.bpe or "
                    "tokenizer.model");
    }
    read_tokenizer_config(v, folder, tokenizer_class);
    if (!pre.empty()) {
        v.pre = pre;
    } else if (!pre_known) {
        v.pre = pre_from_fingerprint(v, tokenizer_class);
        if (v.pre.empty())
            throw Error("tokenizer: " + folder.string() +
                        ": cannot tell the pre-tokenizer (no tokenizer.json, tokenizer_class '" +
                        tokenizer_class + "', merges of no known family)");
        if (v.pre == "llama-bpe" && !fs::exists(folder / "tokenizer_config.json")) {
            v.add_bos = true;  // Llama 3 starts every sequence with <|begin_of_text|>
            v.bos_id = id_of(v, "<|begin_of_text|>");
        }
    }
    if (v.model == ModelKind::Bpe && pre_tokenizer_regexes(v.pre).empty())
        throw Error("tokenizer: " + folder.string() + ": unknown pre-tokenizer '" + v.pre + "'");
    finish_vocab(v, folder.string());
    return v;
}

}  // namespace tandem::tokenizer
