// Global functions of a chat template: range, namespace, dict, raise_exception (Hugging Face),
// strftime_now (Hugging Face), cycler-free lipsum-free: only what chat templates call.
#include <ctime>
#include <memory>

#include "interpreter.h"

namespace tandem::jinja {
namespace {

// Jinja2's sandbox refuses larger ranges; a template needing more is not a chat template.
constexpr int64_t kMaxRange = 100000;

int64_t int_of(const Value& v) {
    if (!v.is_int() && !v.is_bool())
        throw EvalError("range: '" + v.type_name() +
                        "' object cannot be interpreted as an integer");
    return v.as_int();
}

Value range(CallArgs& a) {
    if (a.pos.empty() || a.pos.size() > 3)
        throw EvalError("range expected 1 to 3 arguments, got " + std::to_string(a.pos.size()));
    int64_t start = 0, stop = 0, step = 1;
    if (a.pos.size() == 1) {
        stop = int_of(a.pos[0]);
    } else {
        start = int_of(a.pos[0]);
        stop = int_of(a.pos[1]);
        if (a.pos.size() == 3) step = int_of(a.pos[2]);
    }
    if (step == 0) throw EvalError("range() arg 3 must not be zero");
    __int128 count = step > 0 ? (__int128(stop) - start + step - 1) / step
                              : (__int128(start) - stop - step - 1) / -step;
    if (count < 0) count = 0;
    if (count > kMaxRange)
        throw EvalError("range too big (the limit is " + std::to_string(kMaxRange) + " items)");
    std::vector<Value> items;
    for (int64_t i = 0; i < int64_t(count); ++i) items.push_back(Value::integer(start + i * step));
    return Value::list(std::move(items));
}

Value make_mapping(CallArgs& a, bool ns) {
    Value d = ns ? Value::namespace_() : Value::dict();
    if (a.pos.size() > 1)
        throw EvalError(std::string(ns ? "namespace" : "dict") +
                        " expected at most 1 positional argument");
    if (!a.pos.empty()) {
        const Value& init = a.pos[0];
        if (init.is_dict() || init.is_namespace()) {
            for (const auto& [k, v] : init.dict_data().items) d.dict_data().set(k, v);
        } else if (init.is_list()) {
            for (const auto& pair : init.items()) {
                if (!pair.is_list() || pair.items().size() != 2)
                    throw EvalError("dictionary update sequence element has wrong length");
                d.dict_data().set(pair.items()[0], pair.items()[1]);
            }
        } else {
            throw EvalError("'" + init.type_name() + "' object is not iterable");
        }
    }
    for (const auto& [k, v] : a.kw) d.dict_data().set(Value::string(k), v);
    return d;
}

}  // namespace

void install_globals(Scope& g, Interpreter& in) {
    g.vars["range"] = Value::callable("range", range);
    g.vars["namespace"] =
        Value::callable("namespace", [](CallArgs& a) { return make_mapping(a, true); });
    g.vars["dict"] = Value::callable("dict", [](CallArgs& a) { return make_mapping(a, false); });
    // joiner(sep): a callable returning "" the first time and sep afterwards.
    g.vars["joiner"] = Value::callable("joiner", [](CallArgs& a) {
        std::string sep = a.pos.empty() ? ", " : a.pos[0].str();
        auto used = std::make_shared<bool>(false);
        return Value::callable("joiner", [sep, used](CallArgs&) {
            if (!*used) {
                *used = true;
                return Value::string("");
            }
            return Value::string(sep);
        });
    });
    g.vars["raise_exception"] = Value::callable("raise_exception", [](CallArgs& a) -> Value {
        throw EvalError(a.pos.empty() ? std::string("raise_exception() called") : a.pos[0].str());
    });
    g.vars["strftime_now"] = Value::callable("strftime_now", [&in](CallArgs& a) {
        if (a.pos.empty() || !a.pos[0].is_string())
            throw EvalError("strftime_now expects a format string");
        std::time_t t = std::chrono::system_clock::to_time_t(
            in.options().now.value_or(std::chrono::system_clock::now()));
        std::tm tm{};
        localtime_r(&t, &tm);
        const std::string& fmt = a.pos[0].str_data();
        if (fmt.size() > 256) throw EvalError("strftime_now: format too long");
        char buf[1024];
        size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
        if (n == 0 && !fmt.empty()) return Value::string("");
        return Value::string(std::string(buf, n));
    });
}

}  // namespace tandem::jinja
