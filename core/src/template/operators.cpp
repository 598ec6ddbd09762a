// Arithmetic, concatenation and comparison with Python's rules (int/float promotion, floor
// division and modulo rounding toward -inf, str/list repetition and concatenation).
#include <cmath>
#include <limits>

#include "interpreter.h"
#include "utf8.h"

namespace tandem::jinja {
namespace {

// Strings or lists built by `*` stay below this (a template doing more is broken or hostile).
constexpr size_t kMaxRepeatBytes = size_t(64) << 20;

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
    throw EvalError("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
                    b.type_name() + "'");
}

Value checked_int(__int128 v) {
    if (v > std::numeric_limits<int64_t>::max() || v < std::numeric_limits<int64_t>::min())
        throw EvalError("integer overflow");
    return Value::integer(int64_t(v));
}

Value repeat(const Value& seq, int64_t n) {
    if (n < 0) n = 0;
    if (seq.is_string()) {
        if (n > 0 && seq.str_data().size() > kMaxRepeatBytes / size_t(n))
            throw EvalError("string repetition too large");
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += seq.str_data();
        return Value::string(std::move(out));
    }
    if (n > 0 && seq.items().size() > kMaxRepeatBytes / 16 / size_t(n))
        throw EvalError("list repetition too large");
    std::vector<Value> out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
    return Value::list(std::move(out), seq.is_tuple());
}

double floor_mod(double a, double b) {
    double m = std::fmod(a, b);
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
}

// printf-style `str % args` for the conversions templates use (%s %r %d %i %f %%).
Value percent_format(const std::string& fmt, const Value& args) {
    std::vector<Value> values = args.is_tuple() ? args.items() : std::vector<Value>{args};
    size_t next = 0;
    std::string out;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out.push_back(fmt[i]);
            continue;
        }
        if (++i >= fmt.size()) throw EvalError("incomplete format");
        std::string spec;
        while (i < fmt.size() &&
               std::string_view("0123456789.-+ #").find(fmt[i]) != std::string_view::npos)
            spec.push_back(fmt[i++]);
        if (i >= fmt.size()) throw EvalError("incomplete format");
        char conv = fmt[i];
        if (conv == '%') {
            out.push_back('%');
            continue;
        }
        if (next >= values.size()) throw EvalError("not enough arguments for format string");
        const Value& v = values[next++];
        char buf[512];
        switch (conv) {
            case 's':
                out += v.str();
                break;
            case 'r':
                out += v.repr();
                break;
            case 'd':
            case 'i':
                if (!v.is_number())
                    throw EvalError("%d format: a number is required, not " + v.type_name());
                std::snprintf(
                    buf, sizeof buf, ("%" + spec + "lld").c_str(),
                    static_cast<long long>(v.is_float() ? int64_t(v.as_double()) : v.as_int()));
                out += buf;
                break;
            case 'f':
            case 'e':
            case 'g':
                if (!v.is_number()) throw EvalError("must be real number, not " + v.type_name());
                std::snprintf(buf, sizeof buf, ("%" + spec + conv).c_str(), v.as_double());
                out += buf;
                break;
            default:
                throw EvalError(std::string("unsupported format character '") + conv + "'");
        }
    }
    // Python skips the "not all converted" check for mapping-like arguments (dict, list).
    if (next < values.size() && !args.is_dict() && !(args.is_list() && !args.is_tuple()))
        throw EvalError("not all arguments converted during string formatting");
    return Value::string(std::move(out));
}

}  // namespace

Value binary_op(const std::string& op, const Value& a, const Value& b) {
    if (op == "~") {
        std::string l = a.str(), r = b.str();
        check_string_size(l.size() + r.size());
        return Value::string(l + r);
    }
    require_defined(a);
    require_defined(b);
    bool both_num = a.is_number() && b.is_number();
    bool any_float = a.is_float() || b.is_float();
    if (op == "+") {
        if (both_num)
            return any_float ? Value::real(a.as_double() + b.as_double())
                             : checked_int(__int128(a.as_int()) + b.as_int());
        if (a.is_string() && b.is_string()) {
            check_string_size(a.str_data().size() + b.str_data().size());
            return Value::string(a.str_data() + b.str_data());
        }
        if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
            if (a.items().size() + b.items().size() > kMaxStringBytes / 16)
                throw EvalError("list too long");
            std::vector<Value> items = a.items();
            items.insert(items.end(), b.items().begin(), b.items().end());
            return Value::list(std::move(items), a.is_tuple());
        }
        if (a.is_string() || b.is_string())
            throw EvalError("can only concatenate str (not \"" +
                            (a.is_string() ? b : a).type_name() + "\") to str");
        unsupported(op, a, b);
    }
    if (op == "-") {
        if (both_num)
            return any_float ? Value::real(a.as_double() - b.as_double())
                             : checked_int(__int128(a.as_int()) - b.as_int());
        unsupported(op, a, b);
    }
    if (op == "*") {
        if (both_num)
            return any_float ? Value::real(a.as_double() * b.as_double())
                             : checked_int(__int128(a.as_int()) * b.as_int());
        if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool()))
            return repeat(a, b.as_int());
        if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool()))
            return repeat(b, a.as_int());
        unsupported(op, a, b);
    }
    if (op == "/") {
        if (!both_num) unsupported(op, a, b);
        if (b.as_double() == 0) throw EvalError("division by zero");
        return Value::real(a.as_double() / b.as_double());
    }
    if (op == "//") {
        if (!both_num) unsupported(op, a, b);
        if (b.as_double() == 0) throw EvalError("integer division or modulo by zero");
        if (any_float) return Value::real(std::floor(a.as_double() / b.as_double()));
        int64_t x = a.as_int(), y = b.as_int();
        if (x == INT64_MIN && y == -1) throw EvalError("integer overflow");
        int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
        return Value::integer(q);
    }
    if (op == "%") {
        if (a.is_string()) return percent_format(a.str_data(), b);
        if (!both_num) unsupported(op, a, b);
        if (b.as_double() == 0) throw EvalError("integer division or modulo by zero");
        if (any_float) return Value::real(floor_mod(a.as_double(), b.as_double()));
        int64_t x = a.as_int(), y = b.as_int();
        if (y == -1) return Value::integer(0);
        int64_t m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return Value::integer(m);
    }
    if (op == "**") {
        if (!both_num) unsupported(op, a, b);
        if (!any_float && b.as_int() >= 0) {
            __int128 r = 1;
            int64_t base = a.as_int();
            for (int64_t i = 0; i < b.as_int(); ++i) {
                r *= base;
                if (r > std::numeric_limits<int64_t>::max() ||
                    r < std::numeric_limits<int64_t>::min())
                    throw EvalError("integer overflow");
                if (r == 0 || r == 1) break;
            }
            return Value::integer(int64_t(r));
        }
        if (a.as_double() == 0 && b.as_double() < 0)
            throw EvalError("0.0 cannot be raised to a negative power");
        return Value::real(std::pow(a.as_double(), b.as_double()));
    }
    throw EvalError("unknown operator " + op);
}

bool compare_op(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return py_equal(a, b);
    if (op == "!=") return !py_equal(a, b);
    if (op == "in" || op == "notin") {
        bool found = false;
        if (b.is_string()) {
            require_defined(a);
            if (!a.is_string())
                throw EvalError("'in <string>' requires string as left operand, not " +
                                a.type_name());
            found = b.str_data().find(a.str_data()) != std::string::npos;
        } else if (b.is_dict() || b.is_namespace()) {
            if (a.is_dict() || (a.is_list() && !a.is_tuple()))
                throw EvalError("unhashable type: '" + a.type_name() + "'");
            found = b.dict_data().find(a) != nullptr;
        } else if (b.is_list()) {
            for (const auto& item : b.items())
                if (py_equal(item, a)) {
                    found = true;
                    break;
                }
        } else if (!b.is_undefined()) {
            throw EvalError("argument of type '" + b.type_name() + "' is not iterable");
        }
        return op == "in" ? found : !found;
    }
    require_defined(a);
    require_defined(b);
    if (op == "<") return py_less(a, b);
    if (op == ">") return py_less(b, a);
    if (op == "<=") return py_less(a, b) || py_equal(a, b);
    if (op == ">=") return py_less(b, a) || py_equal(a, b);
    throw EvalError("unknown comparison " + op);
}

}  // namespace tandem::jinja
