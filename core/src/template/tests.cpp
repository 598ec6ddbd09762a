// Jinja2's builtin tests (`x is defined`, `n is divisibleby 3`, ...) with Python's type rules:
// bool counts as a number but not as an integer, strings are sequences and iterable.
#include <cmath>

#include "interpreter.h"
#include "text_ops.h"

namespace tandem::jinja {
namespace {

const Value& arg0(CallArgs& a, const std::string& name) {
    if (!a.pos.empty()) return a.pos[0];
    if (!a.kw.empty()) return a.kw[0].second;
    throw EvalError("test '" + name + "' needs an argument");
}

}  // namespace

bool apply_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& a) {
    using K = Value::Kind;
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "boolean") return v.is_bool();
    if (name == "true") return v.is_bool() && v.as_bool();
    if (name == "false") return v.is_bool() && !v.as_bool();
    if (name == "integer") return v.is_int();
    if (name == "float") return v.is_float();
    if (name == "number") return v.is_number();
    if (name == "string") return v.is_string();
    if (name == "mapping") return v.is_dict();
    if (name == "iterable")
        return v.kind() == K::List || v.kind() == K::Dict || v.kind() == K::String ||
               v.is_undefined();
    if (name == "sequence")
        return v.kind() == K::List || v.kind() == K::Dict || v.kind() == K::String ||
               v.is_undefined();
    if (name == "callable") return v.is_callable() || v.is_undefined();  // Undefined has __call__
    if (name == "odd" || name == "even") {
        require_defined(v);
        if (!v.is_number())
            throw EvalError("test '" + name + "': a number is required, not " + v.type_name());
        int64_t i = v.is_float() ? int64_t(v.as_double()) : v.as_int();
        if (v.is_float() && std::fmod(v.as_double(), 2.0) != 0 &&
            std::fmod(v.as_double(), 1.0) != 0)
            return false;
        return name == "odd" ? (i % 2 != 0) : (i % 2 == 0);
    }
    if (name == "divisibleby") {
        const Value& n = arg0(a, name);
        require_defined(v);
        if (!v.is_number() || !n.is_number()) throw EvalError("divisibleby: numbers are required");
        if (n.as_double() == 0) throw EvalError("integer division or modulo by zero");
        return binary_op("%", v, n).as_double() == 0;
    }
    if (name == "eq" || name == "equalto" || name == "==") return py_equal(v, arg0(a, name));
    if (name == "ne" || name == "!=") return !py_equal(v, arg0(a, name));
    if (name == "lt" || name == "lessthan" || name == "<") return compare_op("<", v, arg0(a, name));
    if (name == "le" || name == "<=") return compare_op("<=", v, arg0(a, name));
    if (name == "gt" || name == "greaterthan" || name == ">")
        return compare_op(">", v, arg0(a, name));
    if (name == "ge" || name == ">=") return compare_op(">=", v, arg0(a, name));
    if (name == "in") return compare_op("in", v, arg0(a, name));
    if (name == "sameas") {
        const Value& o = arg0(a, name);
        if (v.kind() != o.kind()) return false;
        if (v.is_list()) return v.list_identity() == o.list_identity();
        if (v.is_dict() || v.is_namespace()) return v.dict_identity() == o.dict_identity();
        return py_equal(v, o);  // None, True, False and small values are singletons in practice
    }
    if (name == "lower") return py_is(v.str(), "islower");  // str(value).islower()
    if (name == "upper") return py_is(v.str(), "isupper");
    if (name == "escaped") return false;
    (void)in;
    throw EvalError("no test named '" + name + "'");
}

}  // namespace tandem::jinja
