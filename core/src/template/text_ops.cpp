#include "text_ops.h"

#include <algorithm>

#include "utf8.h"

namespace tandem::jinja {
namespace {

char32_t to_upper(char32_t c) {
    if (c >= 'a' && c <= 'z') return c - 32;
    if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
    return c;
}

char32_t to_lower(char32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
    return c;
}

bool is_alpha(char32_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= 0xC0 && c <= 0x24F && c != 0xD7 && c != 0xF7) || (c >= 0x370 && c <= 0x3FF) ||
           (c >= 0x400 && c <= 0x4FF) || (c >= 0x4E00 && c <= 0x9FFF);
}

bool is_cased(char32_t c) {
    return to_upper(c) != c || to_lower(c) != c;
}

}  // namespace

std::string py_strip(const std::string& s, const std::string* chars, bool left, bool right) {
    std::u32string u = utf8_decode(s);
    std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
    auto strip_me = [&](char32_t c) {
        return chars ? set.find(c) != std::u32string::npos : is_py_space(c);
    };
    size_t b = 0, e = u.size();
    if (left)
        while (b < e && strip_me(u[b])) ++b;
    if (right)
        while (e > b && strip_me(u[e - 1])) --e;
    return utf8_encode(std::u32string_view(u).substr(b, e - b));
}

std::vector<std::string> py_split(const std::string& s, const std::string* sep, int64_t maxsplit,
                                  bool from_right) {
    std::vector<std::string> out;
    if (sep) {
        if (sep->empty()) throw EvalError("empty separator");
        if (!from_right) {
            size_t pos = 0;
            while (maxsplit < 0 || int64_t(out.size()) < maxsplit) {
                size_t at = s.find(*sep, pos);
                if (at == std::string::npos) break;
                out.push_back(s.substr(pos, at - pos));
                pos = at + sep->size();
            }
            out.push_back(s.substr(pos));
        } else {
            size_t end = s.size();
            std::vector<std::string> rev;
            while (maxsplit < 0 || int64_t(rev.size()) < maxsplit) {
                if (end < sep->size()) break;
                size_t at = s.rfind(*sep, end - sep->size());
                if (at == std::string::npos) break;
                rev.push_back(s.substr(at + sep->size(), end - at - sep->size()));
                end = at;
            }
            rev.push_back(s.substr(0, end));
            out.assign(rev.rbegin(), rev.rend());
        }
        return out;
    }
    std::u32string u = utf8_decode(s);
    if (!from_right) {
        size_t i = 0;
        while (i < u.size()) {
            while (i < u.size() && is_py_space(u[i])) ++i;
            if (i >= u.size()) break;
            if (maxsplit >= 0 && int64_t(out.size()) >= maxsplit) {
                size_t e = u.size();
                while (e > i && is_py_space(u[e - 1])) --e;
                out.push_back(utf8_encode(u.substr(i, e - i)));
                break;
            }
            size_t j = i;
            while (j < u.size() && !is_py_space(u[j])) ++j;
            out.push_back(utf8_encode(u.substr(i, j - i)));
            i = j;
        }
    } else {
        std::vector<std::string> rev;
        size_t e = u.size();
        while (e > 0) {
            while (e > 0 && is_py_space(u[e - 1])) --e;
            if (e == 0) break;
            if (maxsplit >= 0 && int64_t(rev.size()) >= maxsplit) {
                size_t b = 0;
                while (b < e && is_py_space(u[b])) ++b;
                rev.push_back(utf8_encode(u.substr(b, e - b)));
                break;
            }
            size_t b = e;
            while (b > 0 && !is_py_space(u[b - 1])) --b;
            rev.push_back(utf8_encode(u.substr(b, e - b)));
            e = b;
        }
        out.assign(rev.rbegin(), rev.rend());
    }
    return out;
}

std::vector<std::string> py_splitlines(const std::string& s) {
    std::vector<std::string> out;
    std::u32string u = utf8_decode(s);
    size_t start = 0;
    for (size_t i = 0; i < u.size(); ++i) {
        char32_t c = u[i];
        bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
                   c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
        if (!brk) continue;
        out.push_back(utf8_encode(u.substr(start, i - start)));
        if (c == '\r' && i + 1 < u.size() && u[i + 1] == '\n') ++i;
        start = i + 1;
    }
    if (start < u.size()) out.push_back(utf8_encode(u.substr(start)));
    return out;
}

std::string py_upper(const std::string& s) {
    std::u32string u = utf8_decode(s);
    for (auto& c : u) c = to_upper(c);
    return utf8_encode(u);
}

std::string py_lower(const std::string& s) {
    std::u32string u = utf8_decode(s);
    for (auto& c : u) c = to_lower(c);
    return utf8_encode(u);
}

std::string py_title(const std::string& s) {
    std::u32string u = utf8_decode(s);
    bool prev_cased = false;
    for (auto& c : u) {
        c = prev_cased ? to_lower(c) : to_upper(c);
        prev_cased = is_cased(c);
    }
    return utf8_encode(u);
}

std::string py_capitalize(const std::string& s) {
    std::u32string u = utf8_decode(s);
    for (size_t i = 0; i < u.size(); ++i) u[i] = i == 0 ? to_upper(u[i]) : to_lower(u[i]);
    return utf8_encode(u);
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& repl,
                       int64_t count) {
    std::string out;
    if (old.empty()) {
        // Python inserts the replacement before every code point and at the end.
        std::u32string u = utf8_decode(s);
        int64_t done = 0;
        for (char32_t c : u) {
            if (count < 0 || done < count) {
                out += repl;
                check_string_size(out.size());
                ++done;
            }
            utf8_append(out, c);
        }
        if (count < 0 || done < count) out += repl;
        return out;
    }
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        size_t at = s.find(old, pos);
        if (at == std::string::npos) break;
        out.append(s, pos, at - pos);
        out += repl;
        check_string_size(out.size());
        pos = at + old.size();
        ++done;
    }
    out.append(s, pos, std::string::npos);
    return out;
}

int64_t py_count(const std::string& s, const std::string& sub) {
    if (sub.empty()) return int64_t(utf8_length(s)) + 1;
    int64_t n = 0;
    for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
    return n;
}

std::string py_format(const std::string& fmt, const CallArgs& args) {
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        char c = fmt[i];
        if (c == '}') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
                out.push_back('}');
                ++i;
                continue;
            }
            throw EvalError("single '}' encountered in format string");
        }
        if (c != '{') {
            out.push_back(c);
            continue;
        }
        if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
            out.push_back('{');
            ++i;
            continue;
        }
        size_t close = fmt.find('}', i);
        if (close == std::string::npos) throw EvalError("single '{' encountered in format string");
        std::string field = fmt.substr(i + 1, close - i - 1);
        size_t colon = field.find_first_of(":!");
        if (colon != std::string::npos) {
            if (field.substr(colon) != ":")
                throw EvalError("format specs are not supported: {" + field + "}");
            field = field.substr(0, colon);
        }
        const Value* v = nullptr;
        if (field.empty()) {
            if (auto_index >= args.pos.size())
                throw EvalError("Replacement index " + std::to_string(auto_index) +
                                " out of range");
            v = &args.pos[auto_index++];
        } else if (std::all_of(field.begin(), field.end(),
                               [](char d) { return d >= '0' && d <= '9'; })) {
            size_t idx = std::stoul(field);
            if (idx >= args.pos.size())
                throw EvalError("Replacement index " + field + " out of range");
            v = &args.pos[idx];
        } else {
            for (const auto& [k, val] : args.kw)
                if (k == field) v = &val;
            if (!v) throw EvalError("KeyError: '" + field + "'");
        }
        out += v->str();
        i = close;
    }
    return out;
}

bool py_is(const std::string& s, const std::string& which) {
    std::u32string u = utf8_decode(s);
    if (u.empty()) return false;
    bool any_cased = false;
    for (char32_t c : u) {
        bool digit = c >= '0' && c <= '9';
        if (which == "isdigit" && !digit) return false;
        if (which == "isalpha" && !is_alpha(c)) return false;
        if (which == "isalnum" && !is_alpha(c) && !digit) return false;
        if (which == "isspace" && !is_py_space(c)) return false;
        if (which == "isupper" && to_upper(c) != c) return false;
        if (which == "islower" && to_lower(c) != c) return false;
        if (is_cased(c)) any_cased = true;
    }
    if (which == "isupper" || which == "islower") return any_cased;
    return true;
}

std::string py_pad(const std::string& s, const std::string& how, int64_t width,
                   const std::string& fill) {
    int64_t len = int64_t(utf8_length(s));
    if (width <= len) return s;
    if (width > (int64_t(1) << 24)) throw EvalError(how + "(): width too large");
    int64_t total = width - len;
    auto rep = [&](int64_t n) {
        std::string r;
        for (int64_t i = 0; i < n; ++i) r += fill;
        return r;
    };
    if (how == "zfill") {
        if (!s.empty() && (s[0] == '-' || s[0] == '+'))
            return s.substr(0, 1) + rep(total) + s.substr(1);
        return rep(total) + s;
    }
    if (how == "ljust") return s + rep(total);
    if (how == "rjust") return rep(total) + s;
    // center: Python puts the extra character on the left when the padding is odd and len is odd.
    int64_t left = total / 2 + (total & width & 1);
    return rep(left) + s + rep(total - left);
}

}  // namespace tandem::jinja
