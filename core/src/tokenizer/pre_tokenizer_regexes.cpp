// The pre-tokenizer regexes, as the Hugging Face tokenizer.json files of each model family write
// them (llama.cpp keeps the same list under the tokenizer.ggml.pre names used here).
#include <array>

#include "tokenizer/pre_tokenizer.h"

namespace tandem::tokenizer {
namespace {

// GPT-2's pattern; also the word rule of several others.
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
// Llama 3 (tiktoken cl100k-style) pattern: numbers in groups of up to three.
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2: as Llama 3 but every digit on its own.
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kCjk = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+";
constexpr const char* kPoro = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

struct Entry {
    std::vector<std::string_view> names;
    std::vector<std::string> regexes;
};

const std::vector<Entry>& table() {
    static const std::vector<Entry> entries = {
        {{"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
        {{"llama-bpe", "llama3", "llama-v3", "dbrx", "smaug-bpe", "falcon3", "pixtral",
          "chatglm-bpe", "falcon-h1"},
         {kLlama3}},
        {{"qwen2", "stablelm2", "deepseek-r1-qwen", "megrez", "hunyuan"}, {kQwen2}},
        {{"deepseek-llm"},
         {"[\r\n]",
          "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-"
          "ᲺᲽ-"
          "Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-"
          "ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-"
          "ꙭ"
          "Ꚁ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-"
          "𐳲𑢠-"
          "𑣟𞤀-𞥃]+",
          "\\s?[!-/:-~！-／：-～‘-‟\u3000-。]+", "\\s+$", kCjk, "\\p{N}+"}},
        {{"deepseek-coder"}, {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"}},
        {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
        {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
         {R"(\p{N})", kGpt2}},
        {{"gpt-2", "mpt", "olmo", "jais", "trillion", "phi-2", "jina-es", "jina-de", "gigachat",
          "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe"},
         {kGpt2}},
        {{"poro-chat", "bloom", "gpt3-finnish"}, {kPoro}},
        {{"viking"}, {kPoro, R"(\p{N})"}},
        {{"tekken"}, {kTekken}},
        {{"gpt-4o", "llama4"}, {kGpt4o}},
    };
    return entries;
}

}  // namespace

std::vector<std::string> pre_tokenizer_regexes(std::string_view pre) {
    for (const auto& e : table())
        for (auto n : e.names)
            if (n == pre) return e.regexes;
    return {};
}

bool pre_tokenizer_ignores_merges(std::string_view pre) {
    static constexpr std::array<std::string_view, 7> kNames = {
        "llama-bpe", "llama3", "llama-v3", "falcon3", "pixtral", "tekken", "falcon-h1"};
    for (auto n : kNames)
        if (n == pre) return true;
    return false;
}

}  // namespace tandem::tokenizer
