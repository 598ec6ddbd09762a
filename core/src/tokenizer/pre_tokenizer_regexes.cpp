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
constexpr const char* kPoro = " ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+";

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
        // DeepSeek LLM: letters of the cased-letter (LC) ranges, as code points because several
        // of them (U+1F7D, U+1FD3, U+1FDB, U+1FBE, U+2126, U+212A) change under NFC.
        {{"deepseek-llm"},
         {"[\r\n]",
          "\\s?[A-Za-z"
          "\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293"
          "\u0295-\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A"
          "\u038C\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556"
          "\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B"
          "\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D"
          "\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE"
          "\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4"
          "\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128"
          "\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184"
          "\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B"
          "\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17"
          "\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3"
          "\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2"
          "\U000118A0-\U000118DF\U0001E900-\U0001E943"
          "]+",
          "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+", "\\s+$", kCjk,
          "\\p{N}+"}},
        {{"deepseek-v3", "hunyuan-dense"},
         {R"(\p{N}{1,3})", "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+",
          R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
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
