#pragma once
// The values a template computes with, modelled on the Python objects Jinja2 sees: None, bool,
// int, float, str, list/tuple, dict (insertion ordered), namespace, callables, and Jinja2's
// Undefined. Lists, dicts and namespaces are shared by reference like Python objects, so
// `ns.items` assigned in a loop is seen after it.
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tandem::jinja {

class Value;

// A failure while evaluating (type error, undefined used, raise_exception); the interpreter adds
// the template position and turns it into tandem::TemplateError.
struct EvalError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct ListData {
    std::vector<Value> items;
};

struct DictData {
    std::vector<std::pair<Value, Value>> items;  // insertion order, keys unique (Python ==)
    const Value* find(const Value& key) const;
    Value* find(const Value& key);
    const Value* find(std::string_view key) const;
    void set(Value key, Value value);
};

// Arguments of a call: positional, then keyword in the order written.
struct CallArgs {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
};

struct Callable {
    std::string name;
    std::function<Value(CallArgs&)> fn;
};

class Value {
  public:
    enum class Kind : uint8_t {
        Undefined,
        None,
        Bool,
        Int,
        Float,
        String,
        List,
        Dict,
        Namespace,
        Callable
    };

    Value() = default;  // Undefined
    static Value undefined(std::string hint) {
        Value v;
        v.s_ = std::move(hint);
        return v;
    }
    static Value none() { return Value(Kind::None); }
    static Value boolean(bool b) {
        Value v(Kind::Bool);
        v.b_ = b;
        return v;
    }
    static Value integer(int64_t i) {
        Value v(Kind::Int);
        v.i_ = i;
        return v;
    }
    static Value real(double f) {
        Value v(Kind::Float);
        v.f_ = f;
        return v;
    }
    static Value string(std::string s) {
        Value v(Kind::String);
        v.s_ = std::move(s);
        return v;
    }
    static Value list(std::vector<Value> items = {}, bool tuple = false);
    static Value dict();
    static Value namespace_();
    static Value callable(std::string name, std::function<Value(CallArgs&)> fn);
    static Value from_json(const nlohmann::ordered_json& j);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_float() const { return kind_ == Kind::Float; }
    bool is_number() const {
        return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool;
    }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_list() const { return kind_ == Kind::List; }
    bool is_tuple() const { return kind_ == Kind::List && tuple_; }
    bool is_dict() const { return kind_ == Kind::Dict; }
    bool is_namespace() const { return kind_ == Kind::Namespace; }
    bool is_callable() const { return kind_ == Kind::Callable; }

    bool as_bool() const { return b_; }
    int64_t as_int() const { return kind_ == Kind::Bool ? int64_t(b_) : i_; }
    double as_double() const;                           // of a number (bool, int, float)
    const std::string& str_data() const { return s_; }  // a String's text, an Undefined's hint
    std::vector<Value>& items() const { return list_->items; }
    DictData& dict_data() const { return *dict_; }
    const Callable& callable_data() const { return *fn_; }
    const ListData* list_identity() const { return list_.get(); }
    const DictData* dict_identity() const { return dict_.get(); }

    // Python semantics.
    bool truthy() const;
    std::string str() const;        // str(x); "" for Undefined
    std::string repr() const;       // repr(x), used inside containers
    std::string type_name() const;  // "str", "dict", ... as Python names them in errors

  private:
    explicit Value(Kind k) : kind_(k) {}

    Kind kind_ = Kind::Undefined;
    bool tuple_ = false;
    bool b_ = false;
    int64_t i_ = 0;
    double f_ = 0;
    std::string s_;
    std::shared_ptr<ListData> list_;
    std::shared_ptr<DictData> dict_;
    std::shared_ptr<Callable> fn_;
};

// No string a template builds may exceed this (doubling a string in a loop would otherwise
// exhaust memory before any step limit is reached).
constexpr size_t kMaxStringBytes = size_t(64) << 20;
// Throws EvalError when a string about to be built would exceed kMaxStringBytes.
void check_string_size(size_t bytes);

// Python ==: 1 == 1.0 == True, deep for lists and dicts, identity for callables.
bool py_equal(const Value& a, const Value& b);
// Python <; throws EvalError naming the types when they do not compare.
bool py_less(const Value& a, const Value& b);
// repr() of a Python float (shortest round-trip digits, "1e+20", "inf", "nan").
std::string float_repr(double d);
std::string string_repr(const std::string& s);

}  // namespace tandem::jinja
