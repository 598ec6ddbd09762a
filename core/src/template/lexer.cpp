#include "lexer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include "tandem/template/template.h"
#include "utf8.h"

namespace tandem::jinja {
namespace {

bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::string rstrip_ws(std::string_view s) {
    size_t n = s.size();
    while (n > 0 && is_ws(s[n - 1])) --n;
    return std::string(s.substr(0, n));
}

// Python's string-literal escapes as Jinja2 applies them (unicode-escape): known escapes are
// decoded, unknown ones keep their backslash.
std::string unescape(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c != '\\' || i + 1 >= s.size()) {
            out.push_back(c);
            continue;
        }
        char e = s[++i];
        auto hex = [&](size_t digits) -> bool {
            if (i + digits >= s.size()) return false;
            char32_t cp = 0;
            for (size_t k = 1; k <= digits; ++k) {
                char h = s[i + k];
                if (!std::isxdigit(static_cast<unsigned char>(h))) return false;
                cp = cp * 16 +
                     char32_t(std::isdigit(static_cast<unsigned char>(h))
                                  ? h - '0'
                                  : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
            }
            utf8_append(out, cp);
            i += digits;
            return true;
        };
        switch (e) {
            case 'n':
                out.push_back('\n');
                break;
            case 't':
                out.push_back('\t');
                break;
            case 'r':
                out.push_back('\r');
                break;
            case '\\':
                out.push_back('\\');
                break;
            case '\'':
                out.push_back('\'');
                break;
            case '"':
                out.push_back('"');
                break;
            case 'a':
                out.push_back('\a');
                break;
            case 'b':
                out.push_back('\b');
                break;
            case 'f':
                out.push_back('\f');
                break;
            case 'v':
                out.push_back('\v');
                break;
            case '0':
            case '1':
            case '2':
            case '3':
            case '4':
            case '5':
            case '6':
            case '7': {  // up to three octal digits
                char32_t cp = char32_t(e - '0');
                for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7';
                     ++k)
                    cp = cp * 8 + char32_t(s[++i] - '0');
                utf8_append(out, cp);
                break;
            }
            case '\n':
                break;  // line continuation
            case 'x':
                if (!hex(2)) throw std::invalid_argument("truncated \\xXX escape");
                break;
            case 'u':
                if (!hex(4)) throw std::invalid_argument("truncated \\uXXXX escape");
                break;
            case 'U':
                if (!hex(8)) throw std::invalid_argument("truncated \\UXXXXXXXX escape");
                break;
            default:
                out.push_back('\\');
                out.push_back(e);
        }
    }
    return out;
}

class Lexer {
  public:
    Lexer(std::string source, const LexOptions& o) : src_(std::move(source)), opt_(o) {
        line_starts_.push_back(0);
        for (size_t i = 0; i < src_.size(); ++i)
            if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }

    std::vector<Token> run() {
        while (pos_ < src_.size()) lex_root();
        push(Tok::Eof, "", src_.size());
        return std::move(tokens_);
    }

  private:
    // Line and column (in code points) of a byte offset. Offsets mostly grow, so the column is
    // advanced from the previous answer on the same line instead of recounted from the line start
    // (recounting made one very long line quadratic).
    Pos pos_of(size_t offset) const {
        auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        size_t line = size_t(it - line_starts_.begin());
        size_t line_start = line_starts_[line - 1];
        if (cache_line_ != line || cache_offset_ > offset) {
            cache_line_ = line;
            cache_offset_ = line_start;
            cache_col_ = 1;
        }
        cache_col_ +=
            int(utf8_length(std::string_view(src_).substr(cache_offset_, offset - cache_offset_)));
        cache_offset_ = offset;
        return {int(line), cache_col_};
    }

    [[noreturn]] void fail(const std::string& msg, size_t offset) const {
        Pos p = pos_of(offset);
        throw TemplateError(msg, p.line, p.column);
    }

    void push(Tok t, std::string text, size_t offset) {
        Token tok;
        tok.type = t;
        tok.text = std::move(text);
        tok.pos = pos_of(offset);
        tokens_.push_back(std::move(tok));
    }

    void push_text(std::string text, size_t offset) {
        if (text.empty()) return;
        if (!tokens_.empty() && tokens_.back().type == Tok::Text) {
            tokens_.back().text += text;
            return;
        }
        push(Tok::Text, std::move(text), offset);
    }

    // Applies the whitespace control of the tag that follows `text` (Jinja2's OptionalLStrip).
    std::string control_text(std::string_view text, char sign, bool is_variable) const {
        if (sign == '-') return rstrip_ws(text);
        if (sign != '+' && opt_.lstrip_blocks && !is_variable) {
            size_t nl = text.rfind('\n');
            size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
            if (l_pos > 0 || line_starting_) {
                std::string_view rest = text.substr(l_pos);
                if (!rest.empty() && std::all_of(rest.begin(), rest.end(), is_ws))
                    return std::string(text.substr(0, l_pos));
            }
        }
        return std::string(text);
    }

    // Matches `{%[-+]? raw [-]?%}` at `at`; returns the offset after it, or npos.
    size_t match_raw_begin(size_t at, bool& strip_after, std::string_view word) const {
        size_t p = at + 2;
        if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
        while (p < src_.size() && is_ws(src_[p])) ++p;
        if (src_.compare(p, word.size(), word) != 0) return std::string::npos;
        p += word.size();
        if (p < src_.size() && is_name_char(src_[p])) return std::string::npos;
        while (p < src_.size() && is_ws(src_[p])) ++p;
        strip_after = false;
        if (src_.compare(p, 3, "-%}") == 0) {
            strip_after = true;
            return p + 3;
        }
        if (src_.compare(p, 3, "+%}") == 0 && word == "endraw") return p + 3;
        if (src_.compare(p, 2, "%}") == 0) return p + 2;
        return std::string::npos;
    }

    void skip_ws_after(size_t& p) const {
        while (p < src_.size() && is_ws(src_[p])) ++p;
    }

    void lex_root() {
        size_t tag = src_.find('{', pos_);
        while (tag != std::string::npos && tag + 1 < src_.size() && src_[tag + 1] != '{' &&
               src_[tag + 1] != '%' && src_[tag + 1] != '#')
            tag = src_.find('{', tag + 1);
        if (tag == std::string::npos || tag + 1 >= src_.size()) {
            push_text(src_.substr(pos_), pos_);
            pos_ = src_.size();
            return;
        }
        std::string_view text = std::string_view(src_).substr(pos_, tag - pos_);
        char kind = src_[tag + 1];
        char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+')
                        ? src_[tag + 2]
                        : 0;
        size_t text_offset = pos_;

        if (kind == '%') {
            bool strip_after = false;
            size_t after = match_raw_begin(tag, strip_after, "raw");
            if (after != std::string::npos) {
                push_text(control_text(text, sign, false), text_offset);
                if (strip_after) skip_ws_after(after);
                lex_raw(after, tag);
                return;
            }
        }
        push_text(control_text(text, sign, kind == '{'), text_offset);
        size_t p = tag + 2 + (sign ? 1 : 0);
        if (kind == '#') {
            lex_comment(p, tag);
        } else {
            push(kind == '{' ? Tok::VarBegin : Tok::BlockBegin, "", tag);
            lex_tag(p, kind == '{');
        }
    }

    void lex_raw(size_t p, size_t raw_tag) {
        size_t search = p;
        while (true) {
            size_t tag = src_.find("{%", search);
            if (tag == std::string::npos) fail("missing end of raw directive", raw_tag);
            bool strip_after = false;
            size_t after = match_raw_begin(tag, strip_after, "endraw");
            if (after == std::string::npos) {
                search = tag + 2;
                continue;
            }
            char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+')
                            ? src_[tag + 2]
                            : 0;
            push_text(control_text(std::string_view(src_).substr(p, tag - p), sign, false), p);
            bool plus = src_.compare(after - 3, 3, "+%}") == 0;
            if (strip_after) {
                skip_ws_after(after);
            } else if (!plus && opt_.trim_blocks && after < src_.size() && src_[after] == '\n') {
                ++after;
            }
            line_starting_ = after > 0 && src_[after - 1] == '\n';
            pos_ = after;
            return;
        }
    }

    void lex_comment(size_t p, size_t start) {
        size_t end = src_.find("#}", p);
        if (end == std::string::npos) fail("missing end of comment tag", start);
        char before = end > p ? src_[end - 1] : 0;
        size_t after = end + 2;
        if (before == '-') {
            skip_ws_after(after);
        } else if (before != '+' && opt_.trim_blocks && after < src_.size() &&
                   src_[after] == '\n') {
            ++after;
        }
        line_starting_ = src_[after - 1] == '\n';
        pos_ = after;
    }

    // Tokens of one {{ ... }} or {% ... %} up to and including its end.
    void lex_tag(size_t p, bool variable) {
        std::vector<char> balance;
        while (true) {
            while (p < src_.size() && is_ws(src_[p])) ++p;
            if (p >= src_.size()) fail("unexpected end of template, expected end of tag", p);
            if (balance.empty()) {
                size_t after = std::string::npos;
                if (variable) {
                    if (src_.compare(p, 3, "-}}") == 0) {
                        after = p + 3;
                        skip_ws_after(after);
                    } else if (src_.compare(p, 2, "}}") == 0) {
                        after = p + 2;
                    }
                } else {
                    if (src_.compare(p, 3, "-%}") == 0) {
                        after = p + 3;
                        skip_ws_after(after);
                    } else if (src_.compare(p, 3, "+%}") == 0) {
                        after = p + 3;
                    } else if (src_.compare(p, 2, "%}") == 0) {
                        after = p + 2;
                        if (opt_.trim_blocks && after < src_.size() && src_[after] == '\n') ++after;
                    }
                }
                if (after != std::string::npos) {
                    push(variable ? Tok::VarEnd : Tok::BlockEnd, "", p);
                    line_starting_ = src_[after - 1] == '\n';
                    pos_ = after;
                    return;
                }
            }
            char c = src_[p];
            if (c == '\'' || c == '"') {
                size_t q = p + 1;
                while (q < src_.size() && src_[q] != c) q += src_[q] == '\\' ? 2 : 1;
                if (q >= src_.size()) fail("unterminated string literal", p);
                std::string value;
                try {
                    value = unescape(std::string_view(src_).substr(p + 1, q - p - 1));
                } catch (const std::invalid_argument& e) {
                    fail(e.what(), p);
                }
                push(Tok::String, std::move(value), p);
                p = q + 1;
            } else if (is_digit(c)) {
                p = lex_number(p);
            } else if (is_name_start(c)) {
                size_t q = p;
                while (q < src_.size() && is_name_char(src_[q])) ++q;
                push(Tok::Name, src_.substr(p, q - p), p);
                p = q;
            } else {
                static const char* const two[] = {"**", "//", "==", "!=", "<=", ">="};
                std::string op;
                for (const char* t : two)
                    if (src_.compare(p, 2, t) == 0) op = t;
                if (op.empty()) {
                    if (std::string_view("+-*/%~<>=()[]{},.:|;").find(c) == std::string_view::npos)
                        fail(std::string("unexpected char '") + c + "'", p);
                    op = std::string(1, c);
                }
                if (op == "(" || op == "[" || op == "{") {
                    balance.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
                } else if (op == ")" || op == "]" || op == "}") {
                    if (balance.empty()) fail("unexpected '" + op + "'", p);
                    if (balance.back() != op[0])
                        fail("unexpected '" + op + "', expected '" +
                                 std::string(1, balance.back()) + "'",
                             p);
                    balance.pop_back();
                }
                push(Tok::Op, op, p);
                p += op.size();
            }
        }
    }

    size_t lex_number(size_t p) {
        auto digits = [&](size_t q) {
            while (q < src_.size() &&
                   (is_digit(src_[q]) ||
                    (src_[q] == '_' && q + 1 < src_.size() && is_digit(src_[q + 1]))))
                ++q;
            return q;
        };
        size_t q = digits(p);
        bool is_float = false;
        bool after_dot = p > 0 && src_[p - 1] == '.';  // `foo.0.1` is two subscripts, not a float
        if (!after_dot && q + 1 < src_.size() && src_[q] == '.' && is_digit(src_[q + 1])) {
            q = digits(q + 1);
            is_float = true;
        }
        if (!after_dot && q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
            size_t r = q + 1;
            if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
            if (r < src_.size() && is_digit(src_[r])) {
                q = digits(r);
                is_float = true;
            }
        }
        std::string text;
        for (size_t i = p; i < q; ++i)
            if (src_[i] != '_') text.push_back(src_[i]);
        Token tok;
        tok.pos = pos_of(p);
        tok.text = text;
        if (is_float) {
            tok.type = Tok::Float;
            tok.float_value = std::strtod(text.c_str(), nullptr);
        } else {
            tok.type = Tok::Int;
            errno = 0;
            tok.int_value = std::strtoll(text.c_str(), nullptr, 10);
            if (errno == ERANGE) fail("integer literal too large: " + text, p);
        }
        tokens_.push_back(std::move(tok));
        return q;
    }

    std::string src_;
    LexOptions opt_;
    std::vector<size_t> line_starts_;
    std::vector<Token> tokens_;
    size_t pos_ = 0;
    bool line_starting_ = true;
    mutable size_t cache_line_ = 0;
    mutable size_t cache_offset_ = 0;
    mutable int cache_col_ = 1;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexOptions& options) {
    // Newlines normalised to \n, and one trailing newline dropped, as Jinja2 does by default.
    std::string src;
    src.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            src.push_back('\n');
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            src.push_back(source[i]);
        }
    }
    if (!options.keep_trailing_newline && !src.empty() && src.back() == '\n') src.pop_back();
    return Lexer(std::move(src), options).run();
}

}  // namespace tandem::jinja
