#include "value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "utf8.h"

namespace tandem::jinja {
namespace {

// Containers can hold themselves (`{% set ns.self = ns %}`); recursion over values is bounded
// so such a value fails cleanly instead of overflowing the stack.
constexpr int kMaxValueDepth = 512;
thread_local int value_depth = 0;

struct DepthGuard {
    DepthGuard() {
        if (++value_depth > kMaxValueDepth) {
            value_depth = 0;
            throw EvalError("value nested too deeply (or contains itself)");
        }
    }
    ~DepthGuard() {
        if (value_depth > 0) --value_depth;
    }
};

}  // namespace

void check_string_size(size_t bytes) {
    if (bytes > kMaxStringBytes)
        throw EvalError("string of " + std::to_string(bytes) + " bytes exceeds the limit of " +
                        std::to_string(kMaxStringBytes));
}

const Value* DictData::find(const Value& key) const {
    for (const auto& [k, v] : items)
        if (py_equal(k, key)) return &v;
    return nullptr;
}

Value* DictData::find(const Value& key) {
    for (auto& [k, v] : items)
        if (py_equal(k, key)) return &v;
    return nullptr;
}

const Value* DictData::find(std::string_view key) const {
    for (const auto& [k, v] : items)
        if (k.is_string() && k.str_data() == key) return &v;
    return nullptr;
}

void DictData::set(Value key, Value value) {
    if (Value* v = find(key)) {
        *v = std::move(value);
        return;
    }
    items.emplace_back(std::move(key), std::move(value));
}

Value Value::list(std::vector<Value> items, bool tuple) {
    Value v(Kind::List);
    v.tuple_ = tuple;
    v.list_ = std::make_shared<ListData>();
    v.list_->items = std::move(items);
    return v;
}

Value Value::dict() {
    Value v(Kind::Dict);
    v.dict_ = std::make_shared<DictData>();
    return v;
}

Value Value::namespace_() {
    Value v(Kind::Namespace);
    v.dict_ = std::make_shared<DictData>();
    return v;
}

Value Value::callable(std::string name, std::function<Value(CallArgs&)> fn) {
    Value v(Kind::Callable);
    v.fn_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
    return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null:
            return none();
        case nlohmann::ordered_json::value_t::boolean:
            return boolean(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer:
            return integer(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            uint64_t u = j.get<uint64_t>();
            if (u > uint64_t(INT64_MAX)) return real(double(u));
            return integer(int64_t(u));
        }
        case nlohmann::ordered_json::value_t::number_float:
            return real(j.get<double>());
        case nlohmann::ordered_json::value_t::string:
            return string(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            std::vector<Value> items;
            items.reserve(j.size());
            for (const auto& e : j) items.push_back(from_json(e));
            return list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            Value d = dict();
            for (auto it = j.begin(); it != j.end(); ++it)
                d.dict_->items.emplace_back(string(it.key()), from_json(it.value()));
            return d;
        }
        default:
            return none();  // binary/discarded do not come out of a JSON parse
    }
}

double Value::as_double() const {
    switch (kind_) {
        case Kind::Bool:
            return b_ ? 1.0 : 0.0;
        case Kind::Int:
            return double(i_);
        case Kind::Float:
            return f_;
        default:
            return 0.0;
    }
}

bool Value::truthy() const {
    switch (kind_) {
        case Kind::Undefined:
        case Kind::None:
            return false;
        case Kind::Bool:
            return b_;
        case Kind::Int:
            return i_ != 0;
        case Kind::Float:
            return f_ != 0.0;
        case Kind::String:
            return !s_.empty();
        case Kind::List:
            return !list_->items.empty();
        case Kind::Dict:
            return !dict_->items.empty();
        case Kind::Namespace:
        case Kind::Callable:
            return true;
    }
    return false;
}

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    // Shortest round-trip digits in scientific form, then laid out the way Python's repr does:
    // positional when the decimal exponent is in [-4, 16), scientific otherwise.
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    bool neg = sci[0] == '-';
    if (neg) sci.erase(0, 1);
    size_t e = sci.find('e');
    std::string mant = sci.substr(0, e);
    int exp10 = std::stoi(sci.substr(e + 1));
    std::string digits;
    for (char c : mant)
        if (c != '.') digits.push_back(c);
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    std::string out = neg ? "-" : "";
    if (exp10 < -4 || exp10 >= 16) {
        out += digits[0];
        if (digits.size() > 1) out += "." + digits.substr(1);
        char eb[16];
        std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
        out += eb;
    } else if (exp10 < 0) {
        out += "0." + std::string(size_t(-exp10 - 1), '0') + digits;
    } else {
        size_t int_len = size_t(exp10) + 1;
        if (digits.size() <= int_len) {
            out += digits + std::string(int_len - digits.size(), '0') + ".0";
        } else {
            out += digits.substr(0, int_len) + "." + digits.substr(int_len);
        }
    }
    return out;
}

std::string string_repr(const std::string& s) {
    bool has_single = s.find('\'') != std::string::npos;
    bool has_double = s.find('"') != std::string::npos;
    char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (char32_t c : utf8_decode(s)) {
        if (c == U'\\') {
            out += "\\\\";
        } else if (c == char32_t(quote)) {
            out += '\\';
            out += quote;
        } else if (c == U'\n') {
            out += "\\n";
        } else if (c == U'\r') {
            out += "\\r";
        } else if (c == U'\t') {
            out += "\\t";
        } else if (c < 0x20 || (c >= 0x7F && c < 0xA0)) {
            char b[8];
            std::snprintf(b, sizeof b, "\\x%02x", unsigned(c));
            out += b;
        } else {
            utf8_append(out, c);
        }
    }
    out += quote;
    return out;
}

std::string Value::str() const {
    switch (kind_) {
        case Kind::Undefined:
            return "";
        case Kind::String:
            return s_;
        default:
            return repr();
    }
}

std::string Value::repr() const {
    DepthGuard guard;
    switch (kind_) {
        case Kind::Undefined:
            return "";
        case Kind::None:
            return "None";
        case Kind::Bool:
            return b_ ? "True" : "False";
        case Kind::Int:
            return std::to_string(i_);
        case Kind::Float:
            return float_repr(f_);
        case Kind::String:
            return string_repr(s_);
        case Kind::List: {
            std::string out = tuple_ ? "(" : "[";
            for (size_t i = 0; i < list_->items.size(); ++i) {
                if (i) out += ", ";
                out += list_->items[i].repr();
            }
            if (tuple_ && list_->items.size() == 1) out += ",";
            out += tuple_ ? ")" : "]";
            return out;
        }
        case Kind::Dict:
        case Kind::Namespace: {
            std::string out = kind_ == Kind::Namespace ? "<Namespace {" : "{";
            bool first = true;
            for (const auto& [k, v] : dict_->items) {
                if (!first) out += ", ";
                first = false;
                out += k.repr() + ": " + v.repr();
            }
            out += kind_ == Kind::Namespace ? "}>" : "}";
            return out;
        }
        case Kind::Callable:
            return "<function " + fn_->name + ">";
    }
    return "";
}

std::string Value::type_name() const {
    switch (kind_) {
        case Kind::Undefined:
            return "Undefined";
        case Kind::None:
            return "NoneType";
        case Kind::Bool:
            return "bool";
        case Kind::Int:
            return "int";
        case Kind::Float:
            return "float";
        case Kind::String:
            return "str";
        case Kind::List:
            return tuple_ ? "tuple" : "list";
        case Kind::Dict:
            return "dict";
        case Kind::Namespace:
            return "Namespace";
        case Kind::Callable:
            return "function";
    }
    return "object";
}

bool py_equal(const Value& a, const Value& b) {
    DepthGuard guard;
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None:
            return true;
        case Value::Kind::String:
            return a.str_data() == b.str_data();
        case Value::Kind::List: {
            if (a.is_tuple() != b.is_tuple()) return false;
            const auto& x = a.items();
            const auto& y = b.items();
            if (x.size() != y.size()) return false;
            for (size_t i = 0; i < x.size(); ++i)
                if (!py_equal(x[i], y[i])) return false;
            return true;
        }
        case Value::Kind::Dict: {
            const auto& x = a.dict_data().items;
            const auto& y = b.dict_data().items;
            if (x.size() != y.size()) return false;
            for (const auto& [k, v] : x) {
                const Value* other = b.dict_data().find(k);
                if (!other || !py_equal(v, *other)) return false;
            }
            return true;
        }
        case Value::Kind::Namespace:
            return a.dict_identity() == b.dict_identity();
        case Value::Kind::Callable:
            return &a.callable_data() == &b.callable_data();
        default:
            return false;
    }
}

bool py_less(const Value& a, const Value& b) {
    DepthGuard guard;
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
        return a.as_int() < b.as_int();
    }
    if (a.is_string() && b.is_string()) {
        // Code point order equals UTF-8 byte order.
        return a.str_data() < b.str_data();
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        const auto& x = a.items();
        const auto& y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (py_equal(x[i], y[i])) continue;
            return py_less(x[i], y[i]);
        }
        return x.size() < y.size();
    }
    throw EvalError("'<' not supported between instances of '" + a.type_name() + "' and '" +
                    b.type_name() + "'");
}

}  // namespace tandem::jinja
