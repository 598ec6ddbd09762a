// Jinja2's builtin filters (with Hugging Face's tojson), each behaving as jinja2/filters.py
// does, including how they treat Undefined (most see it as "" or an empty sequence).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "interpreter.h"
#include "text_ops.h"
#include "utf8.h"

namespace tandem::jinja {
namespace {

using FilterFn = Value (*)(Interpreter&, const Value&, ArgReader&);

int64_t int_arg(const Value& v, const char* what) {
    if (!v.is_int() && !v.is_bool())
        throw EvalError(std::string(what) + " must be an integer, not " + v.type_name());
    return v.as_int();
}

std::string str_arg(const Value& v, const char* what) {
    if (!v.is_string())
        throw EvalError(std::string(what) + " must be a string, not " + v.type_name());
    return v.str_data();
}

// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0.
Value get_attribute(Interpreter& in, const Value& item, const Value& attribute) {
    if (attribute.is_int()) return in.getitem(item, attribute);
    Value cur = item;
    std::string path = attribute.str();
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        std::string part =
            path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        bool numeric = !part.empty() && std::all_of(part.begin(), part.end(),
                                                    [](char c) { return c >= '0' && c <= '9'; });
        cur = in.getitem(cur, numeric ? Value::integer(std::stoll(part)) : Value::string(part));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return cur;
}

// Sort key with jinja2's case folding of strings (case_sensitive=False).
Value fold(const Value& v, bool case_sensitive) {
    if (!case_sensitive && v.is_string()) return Value::string(py_lower(v.str_data()));
    return v;
}

int64_t length_of(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return 0;
        case Value::Kind::String:
            return int64_t(utf8_length(v.str_data()));
        case Value::Kind::List:
            return int64_t(v.items().size());
        case Value::Kind::Dict:
        case Value::Kind::Namespace:
            return int64_t(v.dict_data().items.size());
        default:
            throw EvalError("object of type '" + v.type_name() + "' has no len()");
    }
}

Value f_length(Interpreter&, const Value& v, ArgReader&) {
    return Value::integer(length_of(v));
}

Value f_default(Interpreter&, const Value& v, ArgReader& a) {
    Value def = a.get(0, "default_value", Value::string(""));
    bool boolean = a.get(1, "boolean", Value::boolean(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return def;
    return v;
}

Value f_string(Interpreter&, const Value& v, ArgReader&) {
    return Value::string(v.str());
}
Value f_safe(Interpreter&, const Value& v, ArgReader&) {
    return v.is_string() ? v : Value::string(v.str());
}
Value f_upper(Interpreter&, const Value& v, ArgReader&) {
    return Value::string(py_upper(v.str()));
}
Value f_lower(Interpreter&, const Value& v, ArgReader&) {
    return Value::string(py_lower(v.str()));
}
Value f_capitalize(Interpreter&, const Value& v, ArgReader&) {
    return Value::string(py_capitalize(v.str()));
}

// jinja2's title: words start after runs of whitespace, '-', and opening brackets.
Value f_title(Interpreter&, const Value& v, ArgReader&) {
    std::u32string u = utf8_decode(v.str());
    std::string out;
    bool word_start = true;
    for (char32_t c : u) {
        bool sep = is_py_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
        std::string one = utf8_encode(std::u32string(1, c));
        out += sep ? one : word_start ? py_upper(one) : py_lower(one);
        word_start = sep;
    }
    return Value::string(std::move(out));
}

Value f_trim(Interpreter&, const Value& v, ArgReader& a) {
    Value chars = a.get(0, "chars", Value::none());
    std::string set = chars.is_none() ? std::string() : str_arg(chars, "trim chars");
    return Value::string(py_strip(v.str(), chars.is_none() ? nullptr : &set, true, true));
}

Value f_replace(Interpreter&, const Value& v, ArgReader& a) {
    std::string old = a.get(0, "old").str();
    std::string repl = a.get(1, "new").str();
    Value count = a.get(2, "count", Value::none());
    return Value::string(
        py_replace(v.str(), old, repl, count.is_none() ? -1 : int_arg(count, "count")));
}

// Hugging Face's tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value f_tojson(Interpreter&, const Value& v, ArgReader& a) {
    bool ensure_ascii = a.get(0, "ensure_ascii", Value::boolean(false)).truthy();
    Value indent = a.get(1, "indent", Value::none());
    Value seps = a.get(2, "separators", Value::none());
    bool sort_keys = a.get(3, "sort_keys", Value::boolean(false)).truthy();
    int ind = -1;
    if (indent.is_string()) throw EvalError("tojson: a string indent is not supported");
    if (!indent.is_none()) ind = int(std::clamp<int64_t>(int_arg(indent, "indent"), 0, 64));
    std::string item_sep = ind >= 0 ? "," : ", ", key_sep = ": ";
    if (!seps.is_none()) {
        if (!seps.is_list() || seps.items().size() != 2)
            throw EvalError("tojson: separators must be a pair of strings");
        item_sep = str_arg(seps.items()[0], "separator");
        key_sep = str_arg(seps.items()[1], "separator");
    }
    return Value::string(to_json(v, ind, sort_keys, item_sep, key_sep, ensure_ascii));
}

Value f_first(Interpreter&, const Value& v, ArgReader&) {
    std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    return items.front();
}

Value f_last(Interpreter&, const Value& v, ArgReader&) {
    std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items.back();
}

Value f_join(Interpreter& in, const Value& v, ArgReader& a) {
    std::string sep = a.get(0, "d", Value::string("")).str();
    Value attribute = a.get(1, "attribute", Value::none());
    std::string out;
    bool first = true;
    for (const auto& item : iterate(v)) {
        if (!first) out += sep;
        first = false;
        out += (attribute.is_none() ? item : get_attribute(in, item, attribute)).str();
        check_string_size(out.size());
    }
    return Value::string(std::move(out));
}

Value f_list(Interpreter&, const Value& v, ArgReader&) {
    return Value::list(iterate(v));
}

Value f_items(Interpreter&, const Value& v, ArgReader&) {
    if (v.is_undefined()) return Value::list();
    if (!v.is_dict()) throw EvalError("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, val] : v.dict_data().items) out.push_back(Value::list({k, val}, true));
    return Value::list(std::move(out));
}

Value f_int(Interpreter&, const Value& v, ArgReader& a) {
    require_defined(v);  // int(Undefined) raises in Jinja2
    Value def = a.get(0, "default", Value::integer(0));
    int64_t base = int_arg(a.get(1, "base", Value::integer(10)), "base");
    if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
    if (v.is_float()) {
        if (!std::isfinite(v.as_double())) return def;
        return Value::integer(int64_t(std::trunc(v.as_double())));
    }
    if (v.is_string()) {
        std::string s = py_strip(v.str_data(), nullptr, true, true);
        s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
        if (s.empty()) return def;
        char* end = nullptr;
        errno = 0;
        long long i = std::strtoll(s.c_str(), &end, int(base));
        if (*end == '\0' && errno == 0) return Value::integer(i);
        double d = std::strtod(s.c_str(), &end);
        if (*end == '\0' && std::isfinite(d)) return Value::integer(int64_t(std::trunc(d)));
    }
    return def;
}

Value f_float(Interpreter&, const Value& v, ArgReader& a) {
    require_defined(v);
    Value def = a.get(0, "default", Value::real(0.0));
    if (v.is_number()) return Value::real(v.as_double());
    if (v.is_string()) {
        std::string s = py_strip(v.str_data(), nullptr, true, true);
        char* end = nullptr;
        double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && *end == '\0') return Value::real(d);
    }
    return def;
}

Value f_abs(Interpreter&, const Value& v, ArgReader&) {
    require_defined(v);
    if (v.is_float()) return Value::real(std::fabs(v.as_double()));
    if (v.is_int() || v.is_bool()) {
        if (v.as_int() == INT64_MIN) throw EvalError("integer overflow");
        return Value::integer(std::llabs(v.as_int()));
    }
    throw EvalError("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_round(Interpreter&, const Value& v, ArgReader& a) {
    int64_t precision = int_arg(a.get(0, "precision", Value::integer(0)), "precision");
    std::string method = a.get(1, "method", Value::string("common")).str();
    require_defined(v);
    if (!v.is_number()) throw EvalError("round: a number is required, not " + v.type_name());
    if (method == "common" && !v.is_float()) return Value::integer(v.as_int());
    double x = v.as_double();
    double scale = std::pow(10.0, double(precision));
    if (method == "floor") return Value::real(std::floor(x * scale) / scale);
    if (method == "ceil") return Value::real(std::ceil(x * scale) / scale);
    if (method != "common") throw EvalError("method must be 'common', 'ceil' or 'floor'");
    if (!std::isfinite(x)) return Value::real(x);
    if (precision >= 0 && precision <= 300) {
        // printf rounds the exact binary value half-to-even, like Python's round().
        char buf[512];
        std::snprintf(buf, sizeof buf, "%.*f", int(precision), x);
        return Value::real(std::strtod(buf, nullptr));
    }
    return Value::real(std::nearbyint(x * scale) / scale);
}

Value f_indent(Interpreter&, const Value& v, ArgReader& a) {
    require_defined(v);
    if (!v.is_string()) throw EvalError("indent: a string is required, not " + v.type_name());
    Value width = a.get(0, "width", Value::integer(4));
    bool first = a.get(1, "first", Value::boolean(false)).truthy();
    bool blank = a.get(2, "blank", Value::boolean(false)).truthy();
    std::string ind =
        width.is_string()
            ? width.str_data()
            : std::string(size_t(std::clamp<int64_t>(int_arg(width, "width"), 0, 1024)), ' ');
    std::vector<std::string> lines = py_splitlines(v.str() + "\n");
    std::string rv;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i) rv += "\n";
        bool indent_line = i > 0 && (blank || !lines[i].empty());
        rv += (indent_line ? ind : "") + lines[i];
        check_string_size(rv.size());
    }
    if (first) rv = ind + rv;
    return Value::string(std::move(rv));
}

Value f_center(Interpreter&, const Value& v, ArgReader& a) {
    return Value::string(
        py_pad(v.str(), "center", int_arg(a.get(0, "width", Value::integer(80)), "width"), " "));
}

Value f_wordcount(Interpreter&, const Value& v, ArgReader&) {
    // jinja2 counts \w+ runs.
    int64_t n = 0;
    bool in_word = false;
    for (char32_t c : utf8_decode(v.str())) {
        bool w = c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                 (c >= 'A' && c <= 'Z') || c >= 0xAA;
        if (w && !in_word) ++n;
        in_word = w;
    }
    return Value::integer(n);
}

Value f_truncate(Interpreter&, const Value& v, ArgReader& a) {
    int64_t length = int_arg(a.get(0, "length", Value::integer(255)), "length");
    bool killwords = a.get(1, "killwords", Value::boolean(false)).truthy();
    std::string end = a.get(2, "end", Value::string("...")).str();
    Value leeway_v = a.get(3, "leeway", Value::integer(5));
    int64_t leeway = leeway_v.is_none() ? 5 : int_arg(leeway_v, "leeway");
    std::u32string s = utf8_decode(v.str());
    if (int64_t(s.size()) <= length + leeway) return Value::string(v.str());
    int64_t keep = std::max<int64_t>(0, length - int64_t(utf8_length(end)));
    std::u32string cut = s.substr(0, size_t(keep));
    if (killwords) return Value::string(utf8_encode(cut) + end);
    size_t sp = cut.rfind(U' ');
    if (sp != std::u32string::npos) cut = cut.substr(0, sp);
    return Value::string(utf8_encode(cut) + end);
}

Value f_escape(Interpreter&, const Value& v, ArgReader&) {
    std::string out;
    for (char c : v.str()) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out.push_back(c);
        }
    }
    return Value::string(std::move(out));
}

Value f_reverse(Interpreter&, const Value& v, ArgReader&) {
    if (v.is_string()) {
        std::u32string u = utf8_decode(v.str_data());
        std::reverse(u.begin(), u.end());
        return Value::string(utf8_encode(u));
    }
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
}

Value f_sort(Interpreter& in, const Value& v, ArgReader& a) {
    bool reverse = a.get(0, "reverse", Value::boolean(false)).truthy();
    bool case_sensitive = a.get(1, "case_sensitive", Value::boolean(false)).truthy();
    Value attribute = a.get(2, "attribute", Value::none());
    std::vector<Value> items = iterate(v);
    std::vector<std::pair<Value, Value>> keyed;
    for (auto& item : items)
        keyed.emplace_back(
            fold(attribute.is_none() ? item : get_attribute(in, item, attribute), case_sensitive),
            item);
    std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& x, const auto& y) {
        return reverse ? py_less(y.first, x.first) : py_less(x.first, y.first);
    });
    std::vector<Value> out;
    for (auto& kv : keyed) out.push_back(std::move(kv.second));
    return Value::list(std::move(out));
}

Value f_dictsort(Interpreter&, const Value& v, ArgReader& a) {
    if (!v.is_dict()) throw EvalError("dictsort: a mapping is required, not " + v.type_name());
    bool case_sensitive = a.get(0, "case_sensitive", Value::boolean(false)).truthy();
    std::string by = a.get(1, "by", Value::string("key")).str();
    bool reverse = a.get(2, "reverse", Value::boolean(false)).truthy();
    if (by != "key" && by != "value")
        throw EvalError("You can only sort by either 'key' or 'value'");
    auto items = v.dict_data().items;
    std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
        Value kx = fold(by == "key" ? x.first : x.second, case_sensitive);
        Value ky = fold(by == "key" ? y.first : y.second, case_sensitive);
        return reverse ? py_less(ky, kx) : py_less(kx, ky);
    });
    std::vector<Value> out;
    for (auto& [k, val] : items) out.push_back(Value::list({k, val}, true));
    return Value::list(std::move(out));
}

Value f_unique(Interpreter& in, const Value& v, ArgReader& a) {
    bool case_sensitive = a.get(0, "case_sensitive", Value::boolean(false)).truthy();
    Value attribute = a.get(1, "attribute", Value::none());
    std::vector<Value> seen, out;
    for (const auto& item : iterate(v)) {
        Value key =
            fold(attribute.is_none() ? item : get_attribute(in, item, attribute), case_sensitive);
        if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equal(s, key); }))
            continue;
        seen.push_back(key);
        out.push_back(item);
    }
    return Value::list(std::move(out));
}

Value min_max(Interpreter& in, const Value& v, ArgReader& a, bool want_max) {
    bool case_sensitive = a.get(0, "case_sensitive", Value::boolean(false)).truthy();
    Value attribute = a.get(1, "attribute", Value::none());
    std::vector<Value> items = iterate(v);
    if (items.empty())
        return Value::undefined(std::string("No aggregated item, sequence was empty."));
    size_t best = 0;
    auto key = [&](size_t i) {
        return fold(attribute.is_none() ? items[i] : get_attribute(in, items[i], attribute),
                    case_sensitive);
    };
    for (size_t i = 1; i < items.size(); ++i) {
        bool better = want_max ? py_less(key(best), key(i)) : py_less(key(i), key(best));
        if (better) best = i;
    }
    return items[best];
}
Value f_max(Interpreter& in, const Value& v, ArgReader& a) {
    return min_max(in, v, a, true);
}
Value f_min(Interpreter& in, const Value& v, ArgReader& a) {
    return min_max(in, v, a, false);
}

Value f_sum(Interpreter& in, const Value& v, ArgReader& a) {
    Value attribute = a.get(0, "attribute", Value::none());
    Value total = a.get(1, "start", Value::integer(0));
    for (const auto& item : iterate(v))
        total =
            binary_op("+", total, attribute.is_none() ? item : get_attribute(in, item, attribute));
    return total;
}

Value f_attr(Interpreter& in, const Value& v, ArgReader& a) {
    return in.getattr(v, a.get(0, "name").str());
}

// map(attribute=..., default=...); map('filter', ...) is handled in apply_filter.
Value f_map_attribute(Interpreter& in, const Value& v, ArgReader& a) {
    Value attribute = a.get(size_t(-1), "attribute");
    bool has_default = a.has(size_t(-1), "default");
    Value def = a.get(size_t(-1), "default");
    std::vector<Value> out;
    if (!v.truthy()) return Value::list();
    for (const auto& item : iterate(v)) {
        Value got = get_attribute(in, item, attribute);
        out.push_back(got.is_undefined() && has_default ? def : got);
    }
    return Value::list(std::move(out));
}

// select/reject(test, args...) and selectattr/rejectattr(attribute, test, args...).
Value select_impl(Interpreter& in, const Value& v, CallArgs& raw, bool by_attr, bool keep_when) {
    size_t skip = by_attr ? 1 : 0;
    Value attribute =
        by_attr ? (raw.pos.empty() ? throw EvalError("selectattr: missing attribute") : raw.pos[0])
                : Value();
    bool has_test = raw.pos.size() > skip;
    std::string test = has_test ? raw.pos[skip].str() : "";
    CallArgs test_args;
    for (size_t i = skip + 1; i < raw.pos.size(); ++i) test_args.pos.push_back(raw.pos[i]);
    test_args.kw = raw.kw;
    std::vector<Value> out;
    if (!v.truthy()) return Value::list();  // jinja2 skips falsy input (None, "") entirely
    for (const auto& item : iterate(v)) {
        Value subject = by_attr ? get_attribute(in, item, attribute) : item;
        CallArgs args = test_args;
        bool pass = has_test ? in.test(test, subject, args) : subject.truthy();
        if (pass == keep_when) out.push_back(item);
    }
    return Value::list(std::move(out));
}

Value f_batch(Interpreter&, const Value& v, ArgReader& a) {
    int64_t n = int_arg(a.get(0, "linecount"), "linecount");
    if (n <= 0) throw EvalError("batch: linecount must be positive");
    bool fill = a.has(1, "fill_with");
    Value fill_with = a.get(1, "fill_with", Value::none());
    std::vector<Value> out, cur;
    for (const auto& item : iterate(v)) {
        cur.push_back(item);
        if (int64_t(cur.size()) == n) {
            out.push_back(Value::list(std::move(cur)));
            cur.clear();
        }
    }
    if (!cur.empty()) {
        if (fill)
            while (int64_t(cur.size()) < n) cur.push_back(fill_with);
        out.push_back(Value::list(std::move(cur)));
    }
    return Value::list(std::move(out));
}

Value f_pprint(Interpreter&, const Value& v, ArgReader&) {
    return Value::string(v.repr());
}

Value f_format(Interpreter&, const Value& v, ArgReader&) {
    return Value::string(v.str());  // replaced in apply_filter (needs the raw args)
}

const std::unordered_map<std::string, FilterFn>& table() {
    static const std::unordered_map<std::string, FilterFn> t = {
        {"length", f_length},
        {"count", f_length},
        {"default", f_default},
        {"d", f_default},
        {"string", f_string},
        {"safe", f_safe},
        {"upper", f_upper},
        {"lower", f_lower},
        {"capitalize", f_capitalize},
        {"title", f_title},
        {"trim", f_trim},
        {"replace", f_replace},
        {"tojson", f_tojson},
        {"first", f_first},
        {"last", f_last},
        {"join", f_join},
        {"list", f_list},
        {"items", f_items},
        {"int", f_int},
        {"float", f_float},
        {"abs", f_abs},
        {"round", f_round},
        {"indent", f_indent},
        {"center", f_center},
        {"wordcount", f_wordcount},
        {"truncate", f_truncate},
        {"escape", f_escape},
        {"e", f_escape},
        {"forceescape", f_escape},
        {"reverse", f_reverse},
        {"sort", f_sort},
        {"dictsort", f_dictsort},
        {"unique", f_unique},
        {"max", f_max},
        {"min", f_min},
        {"sum", f_sum},
        {"attr", f_attr},
        {"batch", f_batch},
        {"pprint", f_pprint},
        {"format", f_format},
    };
    return t;
}

}  // namespace

Value apply_filter(Interpreter& in, const std::string& name, const Value& operand, CallArgs& args) {
    if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
        return select_impl(in, operand, args, name.size() > 6, name[0] == 's');
    if (name == "map") {
        ArgReader a(args, name);
        bool by_attr = false;
        for (const auto& [k, v] : args.kw)
            if (k == "attribute") by_attr = true;
        if (by_attr) return f_map_attribute(in, operand, a);
        if (args.pos.empty()) throw EvalError("map: a filter name or attribute= is required");
        std::string filter = args.pos[0].str();
        CallArgs rest;
        rest.pos.assign(args.pos.begin() + 1, args.pos.end());
        rest.kw = args.kw;
        std::vector<Value> out;
        if (!operand.truthy()) return Value::list();
        for (const auto& item : iterate(operand)) {
            CallArgs copy = rest;
            out.push_back(in.filter(filter, item, copy));
        }
        return Value::list(std::move(out));
    }
    if (name == "format") {
        Value fmt_args = Value::list(args.pos, true);
        if (!args.kw.empty()) throw EvalError("format: keyword arguments are not supported");
        return binary_op("%", Value::string(operand.str()), fmt_args);
    }
    auto it = table().find(name);
    if (it == table().end()) throw EvalError("no filter named '" + name + "'");
    ArgReader reader(args, name);
    return it->second(in, operand, reader);
}

}  // namespace tandem::jinja
