#include "tokenizer/pre_tokenizer.h"

#include <unicode/regex.h>
#include <unicode/unistr.h>

#include "tandem/common/error.h"
#include "tokenizer/utf8.h"

namespace tandem::tokenizer {
namespace {

// Hugging Face's regex engines (Oniguruma, fancy-regex) take \s as Unicode White_Space, which
// also holds U+000B and U+0085; ICU's \s does not, so spell the property out.
std::string icu_spelling(const std::string& re) {
    std::string out;
    for (size_t i = 0; i < re.size(); ++i) {
        if (re[i] == '\\' && i + 1 < re.size()) {
            if (re[i + 1] == 's') {
                out += "\\p{White_Space}";
                ++i;
                continue;
            }
            if (re[i + 1] == 'S') {
                out += "\\P{White_Space}";
                ++i;
                continue;
            }
            out += re[i];
            out += re[++i];
            continue;
        }
        out += re[i];
    }
    return out;
}

// Text as UTF-16 for ICU, with the byte offset of every UTF-16 unit (and of the end).
struct Utf16Text {
    icu::UnicodeString text;
    std::vector<uint32_t> byte_at;
};

Utf16Text to_utf16(std::string_view s) {
    Utf16Text t;
    t.byte_at.reserve(s.size() + 1);
    for (size_t pos = 0; pos < s.size();) {
        size_t len;
        const uint32_t cp = utf8_decode(s, pos, len);
        t.text.append(UChar32(cp));
        t.byte_at.push_back(uint32_t(pos));
        if (cp >= 0x10000) t.byte_at.push_back(uint32_t(pos));
        pos += len;
    }
    t.byte_at.push_back(uint32_t(s.size()));
    return t;
}

}  // namespace

struct PreTokenizer::Impl {
    std::string name;
    std::vector<std::unique_ptr<icu::RegexPattern>> patterns;
};

PreTokenizer::PreTokenizer(std::string_view pre) : impl_(std::make_unique<Impl>()) {
    impl_->name = std::string(pre);
    const auto regexes = pre_tokenizer_regexes(pre);
    if (regexes.empty())
        throw Error("tokenizer: unknown pre-tokenizer '" + std::string(pre) +
                    "' (tokenizer.ggml.pre)");
    for (const auto& re : regexes) {
        UErrorCode status = U_ZERO_ERROR;
        UParseError perr{};
        std::unique_ptr<icu::RegexPattern> p(icu::RegexPattern::compile(
            icu::UnicodeString::fromUTF8(icu_spelling(re)), 0, perr, status));
        if (U_FAILURE(status))
            throw Error("tokenizer: pre-tokenizer '" + std::string(pre) + "': regex '" + re +
                        "' does not compile: " + u_errorName(status) + " at offset " +
                        std::to_string(perr.offset));
        impl_->patterns.push_back(std::move(p));
    }
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;

std::vector<std::pair<size_t, size_t>> PreTokenizer::split(std::string_view text) const {
    if (text.empty()) return {};
    const Utf16Text u = to_utf16(text);
    // Pieces as UTF-16 ranges while splitting; byte ranges at the end.
    std::vector<std::pair<int32_t, int32_t>> pieces{{0, u.text.length()}};
    std::vector<std::pair<int32_t, int32_t>> next;
    for (const auto& pattern : impl_->patterns) {
        UErrorCode status = U_ZERO_ERROR;
        std::unique_ptr<icu::RegexMatcher> m(pattern->matcher(u.text, status));
        if (U_FAILURE(status))
            throw Error(std::string("tokenizer: ICU matcher: ") + u_errorName(status));
        next.clear();
        for (const auto& [begin, end] : pieces) {
            m->region(begin, end, status);
            int32_t at = begin;
            while (m->find(status) && U_SUCCESS(status)) {
                const int32_t s = m->start(status), e = m->end(status);
                if (s == e) continue;
                if (s > at) next.emplace_back(at, s);
                next.emplace_back(s, e);
                at = e;
            }
            if (U_FAILURE(status))
                throw Error(std::string("tokenizer: ICU regex: ") + u_errorName(status));
            if (at < end) next.emplace_back(at, end);
        }
        pieces.swap(next);
    }
    std::vector<std::pair<size_t, size_t>> out;
    out.reserve(pieces.size());
    for (const auto& [b, e] : pieces) out.emplace_back(u.byte_at[b], u.byte_at[e]);
    return out;
}

}  // namespace tandem::tokenizer
