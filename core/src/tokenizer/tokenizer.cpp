#include "tandem/tokenizer/tokenizer.h"

#include <optional>

#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/byte_alphabet.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_matcher.h"
#include "tokenizer/spm_model.h"
#include "tokenizer/token_index.h"

namespace tandem::tokenizer {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

std::string spm_escape_spaces(std::string_view text) {
    std::string out;
    out.reserve(text.size() + text.size() / 4);
    for (char c : text) {
        if (c == ' ')
            out += kSpmSpace;
        else
            out += c;
    }
    return out;
}

std::string spm_unescape_spaces(std::string_view token) {
    std::string out;
    out.reserve(token.size());
    for (size_t pos = 0; pos < token.size();) {
        if (token.compare(pos, kSpmSpace.size(), kSpmSpace) == 0) {
            out += ' ';
            pos += kSpmSpace.size();
        } else {
            out += token[pos++];
        }
    }
    return out;
}

// The byte of a "<0xNN>" token.
std::optional<uint8_t> spm_byte_value(std::string_view token) {
    if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return std::nullopt;
    unsigned v = 0;
    for (char c : token.substr(3, 2)) {
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= unsigned(c - '0');
        else if (c >= 'A' && c <= 'F')
            v |= unsigned(c - 'A' + 10);
        else if (c >= 'a' && c <= 'f')
            v |= unsigned(c - 'a' + 10);
        else
            return std::nullopt;
    }
    return uint8_t(v);
}

}  // namespace

struct Tokenizer::Impl {
    Vocab vocab;
    TokenIndex index;
    SpecialMatcher user_defined;  // matched always
    SpecialMatcher all_special;   // matched with parse_special: + control and unknown tokens
    std::optional<PreTokenizer> pre;
    std::optional<BpeModel> bpe;
    std::optional<SpmModel> spm;

    void encode_text(std::string_view text, bool space_prefix, std::vector<int32_t>& out) const {
        if (spm) {
            std::string escaped = space_prefix ? std::string(kSpmSpace) : std::string();
            escaped += spm_escape_spaces(text);
            spm->encode(escaped, out);
            return;
        }
        for (const auto& [b, e] : pre->split(text)) bpe->encode_word(text.substr(b, e - b), out);
    }
};

Tokenizer::Tokenizer(Vocab vocab) : impl_(std::make_unique<Impl>()) {
    Impl& m = *impl_;
    m.vocab = std::move(vocab);
    const Vocab& v = m.vocab;
    if (v.tokens.empty()) throw Error("tokenizer: vocabulary has no tokens");
    if (!v.types.empty() && v.types.size() != v.tokens.size())
        throw Error("tokenizer: token types and tokens differ in number");
    if (!v.scores.empty() && v.scores.size() != v.tokens.size())
        throw Error("tokenizer: scores and tokens differ in number");
    m.index.reserve(v.tokens.size());
    for (size_t i = 0; i < v.tokens.size(); ++i) {
        m.index.add(v.tokens[i], int32_t(i));
        const TokenType t = v.types.empty() ? TokenType::Normal : v.types[i];
        if (t == TokenType::UserDefined) m.user_defined.add(v.tokens[i], int32_t(i));
        if (t == TokenType::UserDefined || t == TokenType::Control || t == TokenType::Unknown)
            m.all_special.add(v.tokens[i], int32_t(i));
    }
    if (v.model == ModelKind::Spm) {
        m.spm.emplace(m.vocab, m.index);
    } else {
        m.pre.emplace(v.pre);
        m.bpe.emplace(m.vocab, m.index, pre_tokenizer_ignores_merges(v.pre));
        if (m.bpe->skipped_merges() > 0)
            log_debug("tokenizer: " + std::to_string(m.bpe->skipped_merges()) +
                      " merges name tokens outside the vocabulary; skipped");
    }
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

const Vocab& Tokenizer::vocab() const {
    return impl_->vocab;
}

int32_t Tokenizer::find(std::string_view token) const {
    return impl_->index.find(token);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
    const Impl& m = *impl_;
    const Vocab& v = m.vocab;
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 4);
    if (add_special && v.add_bos && v.bos_id >= 0) out.push_back(v.bos_id);
    const SpecialMatcher& matcher = parse_special ? m.all_special : m.user_defined;
    // SentencePiece puts the space prefix at the start and after every special token (llama.cpp).
    bool after_special = true;
    for (const auto& f : matcher.split(text)) {
        if (f.token >= 0) {
            out.push_back(f.token);
            after_special = true;
            continue;
        }
        m.encode_text(text.substr(f.begin, f.end - f.begin), v.add_space_prefix && after_special,
                      out);
        after_special = false;
    }
    if (add_special && v.add_eos && v.eos_id >= 0) out.push_back(v.eos_id);
    return out;
}

std::vector<std::string_view> Tokenizer::pre_tokenize(std::string_view text,
                                                      bool parse_special) const {
    const Impl& m = *impl_;
    std::vector<std::string_view> out;
    const SpecialMatcher& matcher = parse_special ? m.all_special : m.user_defined;
    for (const auto& f : matcher.split(text)) {
        const std::string_view part = text.substr(f.begin, f.end - f.begin);
        if (f.token >= 0 || m.spm) {
            out.push_back(part);
            continue;
        }
        for (const auto& [b, e] : m.pre->split(part)) out.push_back(part.substr(b, e - b));
    }
    return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
    const Vocab& v = impl_->vocab;
    const std::string& text = v.token(id);
    switch (v.type(id)) {
        case TokenType::Normal:
            return impl_->spm ? spm_unescape_spaces(text) : ByteAlphabet::instance().decode(text);
        case TokenType::UserDefined:
            return text;
        case TokenType::Control:
        case TokenType::Unknown:
            return render_special ? text : std::string();
        case TokenType::Byte:
            if (auto b = spm_byte_value(text)) return std::string(1, char(*b));
            return impl_->spm ? text : ByteAlphabet::instance().decode(text);
        case TokenType::Unused:
        case TokenType::Undefined:
            break;
    }
    return {};
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
    const Vocab& v = impl_->vocab;
    std::string out;
    // Drop the space encode put in front: only from the first piece of text, and only when
    // nothing came before it.
    bool strip_space = impl_->spm && v.add_space_prefix;
    for (int32_t id : ids) {
        std::string piece = token_to_piece(id, render_special);
        if (strip_space && !piece.empty()) {
            const TokenType t = v.type(id);
            if (t == TokenType::Normal && piece[0] == ' ') piece.erase(0, 1);
            strip_space = false;
        }
        out += piece;
    }
    return out;
}

}  // namespace tandem::tokenizer
