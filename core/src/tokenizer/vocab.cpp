#include <algorithm>
#include <array>
#include <string_view>

#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "tandem/tokenizer/vocab.h"
#include "tokenizer/vocab_finish.h"

namespace tandem::tokenizer {

const std::string& Vocab::token(int32_t id) const {
    if (id < 0 || size_t(id) >= tokens.size())
        throw Error("tokenizer: token id " + std::to_string(id) + " out of range (vocabulary of " +
                    std::to_string(tokens.size()) + ")");
    return tokens[size_t(id)];
}

TokenType Vocab::type(int32_t id) const {
    token(id);  // range check
    return types.empty() ? TokenType::Normal : types[size_t(id)];
}

bool Vocab::is_eog(int32_t id) const {
    return std::find(eog_ids.begin(), eog_ids.end(), id) != eog_ids.end();
}

const char* model_kind_name(ModelKind kind) {
    return kind == ModelKind::Spm ? "llama" : "gpt2";
}

void finish_vocab(Vocab& v, const std::string& source) {
    if (v.tokens.empty()) throw Error("tokenizer: " + source + ": vocabulary has no tokens");
    const size_t n = v.tokens.size();
    if (v.types.empty()) v.types.assign(n, TokenType::Normal);
    if (v.types.size() != n)
        throw Error("tokenizer: " + source + ": " + std::to_string(v.types.size()) +
                    " token types for " + std::to_string(n) + " tokens");
    if (!v.scores.empty() && v.scores.size() != n)
        throw Error("tokenizer: " + source + ": " + std::to_string(v.scores.size()) +
                    " scores for " + std::to_string(n) + " tokens");
    for (size_t i = 0; i < n; ++i) {
        const auto t = int32_t(v.types[i]);
        if (t < 0 || t > int32_t(TokenType::Byte))
            throw Error("tokenizer: " + source + ": token " + std::to_string(i) +
                        " has unknown type " + std::to_string(t));
    }
    // bos/eos/unk steer encoding: a wrong one is an error. The others only label tokens.
    const auto check = [&](int32_t& id, const char* name, bool required_valid) {
        if (id < 0 || size_t(id) < n) return;
        const std::string msg = "tokenizer: " + source + ": " + name + " " + std::to_string(id) +
                                " out of range (vocabulary of " + std::to_string(n) + ")";
        if (required_valid) throw Error(msg);
        log_warn(msg + "; ignored");
        id = -1;
    };
    check(v.bos_id, "bos_token_id", true);
    check(v.eos_id, "eos_token_id", true);
    check(v.unk_id, "unknown_token_id", true);
    check(v.pad_id, "padding_token_id", false);
    check(v.sep_id, "seperator_token_id", false);
    check(v.mask_id, "mask_token_id", false);
    check(v.eot_id, "eot_token_id", false);
    check(v.eom_id, "eom_token_id", false);

    // Chat models end a turn with a token other than eos; llama.cpp recognises them by text.
    static constexpr std::array<std::string_view, 9> kEot = {
        "<|eot_id|>",        "<|im_end|>", "<|end|>", "<end_of_turn>",
        "<|endoftext|>",     "<EOT>",      "_<EOT>",  "<｜end▁of▁sentence｜>",
        "<end_of_utterance>"};
    static constexpr std::array<std::string_view, 12> kEog = {
        "<|eot_id|>", "<|im_end|>",    "<|end|>",         "<|return|>",
        "<|call|>",   "<end_of_turn>", "<|endoftext|>",   "<|eom_id|>",
        "<EOT>",      "_<EOT>",        "<|end_of_text|>", "<end_of_utterance>"};
    const auto special = [&](size_t i) {
        return v.types[i] == TokenType::Control || v.types[i] == TokenType::UserDefined;
    };
    if (v.eot_id < 0) {
        for (auto text : kEot) {
            auto it = std::find(v.tokens.begin(), v.tokens.end(), text);
            if (it != v.tokens.end() && special(size_t(it - v.tokens.begin()))) {
                v.eot_id = int32_t(it - v.tokens.begin());
                break;
            }
        }
    }
    if (v.eom_id < 0) {
        auto it = std::find(v.tokens.begin(), v.tokens.end(), "<|eom_id|>");
        if (it != v.tokens.end()) v.eom_id = int32_t(it - v.tokens.begin());
    }
    v.eog_ids.clear();
    const auto add_eog = [&](int32_t id) {
        if (id >= 0 && !v.is_eog(id)) v.eog_ids.push_back(id);
    };
    add_eog(v.eos_id);
    add_eog(v.eot_id);
    add_eog(v.eom_id);
    for (size_t i = 0; i < n; ++i)
        if (special(i) && std::find(kEog.begin(), kEog.end(), v.tokens[i]) != kEog.end())
            add_eog(int32_t(i));
}

}  // namespace tandem::tokenizer
