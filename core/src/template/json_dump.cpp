// Python's json.dumps as the Hugging Face `tojson` filter calls it (ensure_ascii=False): the
// spacing matters, since the text goes into the prompt byte for byte. Default separators are
// ", " and ": ", or "," and ": " when indenting.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "interpreter.h"
#include "utf8.h"

namespace tandem::jinja {
namespace {

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
    out.push_back('"');
    if (ensure_ascii) {
        std::u32string u = utf8_decode(s);
        for (char32_t c : u) {
            if (c < 0x80) {
                std::string one(1, char(c));
                std::string tmp;
                dump_string(tmp, one, false);
                out += tmp.substr(1, tmp.size() - 2);
                continue;
            }
            char b[16];
            if (c >= 0x10000) {
                char32_t v = c - 0x10000;
                std::snprintf(b, sizeof b, "\\u%04x\\u%04x", unsigned(0xD800 + (v >> 10)),
                              unsigned(0xDC00 + (v & 0x3FF)));
            } else {
                std::snprintf(b, sizeof b, "\\u%04x", unsigned(c));
            }
            out += b;
        }
        out.push_back('"');
        return;
    }
    for (char ch : s) {
        unsigned char c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (c < 0x20) {
                    char b[8];
                    std::snprintf(b, sizeof b, "\\u%04x", c);
                    out += b;
                } else {
                    out.push_back(ch);
                }
        }
    }
    out.push_back('"');
}

struct Dumper {
    int indent;
    bool sort_keys;
    const std::string& item_sep;
    const std::string& key_sep;
    bool ensure_ascii;
    int depth = 0;

    void newline(std::string& out, int level) const {
        out.push_back('\n');
        out.append(size_t(indent) * size_t(level), ' ');
    }

    std::string key_text(const Value& k) const {
        // json.dumps turns keys into strings: str as is, numbers and bools/None as JSON literals.
        switch (k.kind()) {
            case Value::Kind::String:
                return k.str_data();
            case Value::Kind::None:
                return "null";
            case Value::Kind::Bool:
                return k.as_bool() ? "true" : "false";
            case Value::Kind::Int:
                return std::to_string(k.as_int());
            case Value::Kind::Float:
                return float_repr(k.as_double());
            default:
                throw EvalError("keys must be str, int, float, bool or None, not " + k.type_name());
        }
    }

    void dump(std::string& out, const Value& v) {
        if (++depth > 512) throw EvalError("tojson: nesting too deep");
        switch (v.kind()) {
            case Value::Kind::None:
                out += "null";
                break;
            case Value::Kind::Bool:
                out += v.as_bool() ? "true" : "false";
                break;
            case Value::Kind::Int:
                out += std::to_string(v.as_int());
                break;
            case Value::Kind::Float: {
                double d = v.as_double();
                if (std::isnan(d))
                    out += "NaN";
                else if (std::isinf(d))
                    out += d < 0 ? "-Infinity" : "Infinity";
                else
                    out += float_repr(d);
                break;
            }
            case Value::Kind::String:
                dump_string(out, v.str_data(), ensure_ascii);
                break;
            case Value::Kind::List: {
                const auto& items = v.items();
                if (items.empty()) {
                    out += "[]";
                    break;
                }
                out.push_back('[');
                for (size_t i = 0; i < items.size(); ++i) {
                    if (i) out += item_sep;
                    if (indent >= 0) newline(out, depth);
                    dump(out, items[i]);
                }
                if (indent >= 0) newline(out, depth - 1);
                out.push_back(']');
                break;
            }
            case Value::Kind::Dict: {
                std::vector<std::pair<std::string, const Value*>> entries;
                for (const auto& [k, val] : v.dict_data().items)
                    entries.emplace_back(key_text(k), &val);
                if (sort_keys)
                    std::stable_sort(
                        entries.begin(), entries.end(),
                        [](const auto& a, const auto& b) { return a.first < b.first; });
                if (entries.empty()) {
                    out += "{}";
                    break;
                }
                out.push_back('{');
                for (size_t i = 0; i < entries.size(); ++i) {
                    if (i) out += item_sep;
                    if (indent >= 0) newline(out, depth);
                    dump_string(out, entries[i].first, ensure_ascii);
                    out += key_sep;
                    dump(out, *entries[i].second);
                }
                if (indent >= 0) newline(out, depth - 1);
                out.push_back('}');
                break;
            }
            case Value::Kind::Undefined:
                throw EvalError("Object of type Undefined is not JSON serializable");
            default:
                throw EvalError("Object of type " + v.type_name() + " is not JSON serializable");
        }
        --depth;
    }
};

}  // namespace

std::string to_json(const Value& v, int indent, bool sort_keys, const std::string& item_sep,
                    const std::string& key_sep, bool ensure_ascii) {
    std::string out;
    Dumper d{indent, sort_keys, item_sep, key_sep, ensure_ascii};
    d.dump(out, v);
    return out;
}

}  // namespace tandem::jinja
