#pragma once
// A chat-capable tiny model for the app's cluster tests: the hf-tiny qwen2 fixture (random
// weights, 1024 tokens) converted with a small byte-level BPE vocabulary written here: the 256
// byte tokens, merges of letter pairs up to id 1020, and three special tokens the chat template
// uses. None of them ends a generation, so a greedy reply always runs to its token limit (the
// random model would otherwise stop at a random end token).
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "tandem/hf/convert.h"

namespace tandem::test {

inline constexpr const char* kTinyChatTemplate =
    "{% for message in messages %}<|turn|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|turn_end|>\n{% endfor %}{% if add_generation_prompt %}<|turn|>assistant\n{% endif %}";

// The prompt kTinyChatTemplate renders for `turns` (role, content), with the assistant's turn
// opened: what the app must send the engine, written out independently of the app's renderer.
inline std::string tinyChatPrompt(const std::vector<std::pair<std::string, std::string>>& turns) {
    std::string s;
    for (const auto& [role, content] : turns)
        s += "<|turn|>" + role + "\n" + content + "<|turn_end|>\n";
    return s + "<|turn|>assistant\n";
}

// GPT-2's byte -> printable character map (what byte-level BPE vocabularies store).
inline std::string byteChar(int b) {
    int cp = b;
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    if (!printable) {
        int n = 0;
        for (int x = 0; x < b; ++x)
            if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE))) ++n;
        cp = 256 + n;
    }
    std::string out;
    if (cp < 0x80) {
        out += char(cp);
    } else {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    }
    return out;
}

// Writes the GGUF into `dir` once; nullopt when the hf-tiny fixture is absent.
inline std::optional<std::filesystem::path> tinyChatModel(const std::filesystem::path& dir) {
    const auto src = fixture("hf-tiny/qwen2-tiny");
    if (!src) return std::nullopt;
    namespace fs = std::filesystem;
    const fs::path folder = dir / "qwen2-tiny-chat", out = dir / "qwen2-tiny-chat.gguf";
    if (fs::exists(out)) return out;
    fs::create_directories(folder);
    for (const char* f : {"config.json", "model.safetensors"})
        if (!fs::exists(folder / f)) fs::create_symlink(*src / f, folder / f);
    nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
    for (int b = 0; b < 256; ++b) vocab[byteChar(b)] = b;
    const std::string letters = "abcdefghijklmnopqrstuvwxyz";
    std::string merges = "#version: 0.2\n";
    int id = 256;
    std::vector<std::string> units;
    for (char c : letters) units.push_back(std::string(1, c));
    units.push_back(byteChar(' '));
    units.push_back(".");
    for (const auto& a : units)
        for (const auto& b : units) {
            if (id > 1020) break;
            if (vocab.contains(a + b)) continue;
            vocab[a + b] = id++;
            merges += a + " " + b + "\n";
        }
    std::ofstream(folder / "vocab.json") << vocab.dump();
    std::ofstream(folder / "merges.txt") << merges;
    nlohmann::json cfg = {{"tokenizer_class", "Qwen2Tokenizer"},
                          {"added_tokens_decoder",
                           {{"1021", {{"content", "<|turn|>"}, {"special", true}}},
                            {"1022", {{"content", "<|turn_end|>"}, {"special", true}}},
                            {"1023", {{"content", "<|pad|>"}, {"special", true}}}}},
                          {"pad_token", "<|pad|>"},
                          {"chat_template", kTinyChatTemplate}};
    std::ofstream(folder / "tokenizer_config.json") << cfg.dump(2);
    hf::ConvertOptions o;
    o.type = DType::F32;
    hf::convert_hf(folder, out, o);
    return out;
}

}  // namespace tandem::test
