// Python methods that templates call on values: str (strip, split, startswith, replace, ...),
// dict (items, keys, values, get) and list (append and friends; Jinja2's sandbox would refuse
// list mutation, but templates written for llama.cpp use it, so it is allowed here).
#include <algorithm>
#include <cctype>

#include "interpreter.h"
#include "text_ops.h"
#include "utf8.h"

namespace tandem::jinja {
namespace {

using Fn = std::function<Value(CallArgs&)>;

Value method(const std::string& name, Fn fn) {
    return Value::callable(name, std::move(fn));
}

std::string need_str(const Value& v, const std::string& fn, const char* what) {
    if (!v.is_string()) throw EvalError(fn + "() " + what + " must be str, not " + v.type_name());
    return v.str_data();
}

int64_t need_int(const Value& v, const std::string& fn) {
    if (!v.is_int() && !v.is_bool())
        throw EvalError(fn + "(): an integer is required, not " + v.type_name());
    return v.as_int();
}

Value string_method(const Value& self, const std::string& name) {
    const std::string s = self.str_data();
    auto strip_fn = [s, name](bool left, bool right) {
        return method(name, [s, name, left, right](CallArgs& a) {
            ArgReader r(a, name);
            Value chars = r.get(0, "chars", Value::none());
            if (!chars.is_none()) need_str(chars, name, "argument");
            return Value::string(
                py_strip(s, chars.is_none() ? nullptr : &chars.str_data(), left, right));
        });
    };
    if (name == "strip") return strip_fn(true, true);
    if (name == "lstrip") return strip_fn(true, false);
    if (name == "rstrip") return strip_fn(false, true);
    if (name == "split" || name == "rsplit") {
        return method(name, [s, name](CallArgs& a) {
            ArgReader r(a, name);
            Value sep = r.get(0, "sep", Value::none());
            int64_t maxsplit = need_int(r.get(1, "maxsplit", Value::integer(-1)), name);
            std::string sep_text = sep.is_none() ? std::string() : need_str(sep, name, "separator");
            std::vector<std::string> parts =
                py_split(s, sep.is_none() ? nullptr : &sep_text, maxsplit, name == "rsplit");
            std::vector<Value> out;
            for (auto& p : parts) out.push_back(Value::string(std::move(p)));
            return Value::list(std::move(out));
        });
    }
    if (name == "splitlines") {
        return method(name, [s](CallArgs&) {
            std::vector<Value> out;
            for (auto& line : py_splitlines(s)) out.push_back(Value::string(std::move(line)));
            return Value::list(std::move(out));
        });
    }
    if (name == "startswith" || name == "endswith") {
        return method(name, [s, name](CallArgs& a) {
            ArgReader r(a, name);
            Value arg = r.get(0, "prefix");
            std::vector<Value> options = arg.is_tuple() ? arg.items() : std::vector<Value>{arg};
            for (const auto& o : options) {
                const std::string p = need_str(o, name, "argument");
                bool hit =
                    name == "startswith"
                        ? s.compare(0, p.size(), p) == 0 && s.size() >= p.size()
                        : s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
                if (hit) return Value::boolean(true);
            }
            return Value::boolean(false);
        });
    }
    if (name == "upper") return method(name, [s](CallArgs&) { return Value::string(py_upper(s)); });
    if (name == "lower") return method(name, [s](CallArgs&) { return Value::string(py_lower(s)); });
    if (name == "title") return method(name, [s](CallArgs&) { return Value::string(py_title(s)); });
    if (name == "capitalize")
        return method(name, [s](CallArgs&) { return Value::string(py_capitalize(s)); });
    if (name == "replace") {
        return method(name, [s, name](CallArgs& a) {
            ArgReader r(a, name);
            const std::string old = need_str(r.get(0, "old"), name, "argument 1");
            const std::string repl = need_str(r.get(1, "new"), name, "argument 2");
            int64_t count = need_int(r.get(2, "count", Value::integer(-1)), name);
            return Value::string(py_replace(s, old, repl, count));
        });
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex" ||
        name == "count") {
        return method(name, [s, name](CallArgs& a) {
            ArgReader r(a, name);
            const std::string sub = need_str(r.get(0, "sub"), name, "argument");
            if (name == "count") return Value::integer(py_count(s, sub));
            size_t at = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
            if (at == std::string::npos) {
                if (name == "index" || name == "rindex") throw EvalError("substring not found");
                return Value::integer(-1);
            }
            return Value::integer(int64_t(utf8_length(std::string_view(s).substr(0, at))));
        });
    }
    if (name == "join") {
        return method(name, [s](CallArgs& a) {
            if (a.pos.empty()) throw EvalError("join() takes exactly one argument");
            std::string out;
            bool first = true;
            for (const auto& item : iterate(a.pos[0])) {
                if (!item.is_string())
                    throw EvalError("sequence item: expected str instance, " + item.type_name() +
                                    " found");
                if (!first) out += s;
                first = false;
                out += item.str_data();
                check_string_size(out.size());
            }
            return Value::string(std::move(out));
        });
    }
    if (name == "format")
        return method(name, [s](CallArgs& a) { return Value::string(py_format(s, a)); });
    if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
        name == "isupper" || name == "islower") {
        return method(name, [s, name](CallArgs&) { return Value::boolean(py_is(s, name)); });
    }
    if (name == "zfill" || name == "center" || name == "ljust" || name == "rjust") {
        return method(name, [s, name](CallArgs& a) {
            ArgReader r(a, name);
            int64_t width = need_int(r.get(0, "width"), name);
            std::string fill =
                name == "zfill" ? "0"
                                : need_str(r.get(1, "fillchar", Value::string(" ")), name, "fill");
            return Value::string(py_pad(s, name, width, fill));
        });
    }
    return Value();
}

Value dict_method(const Value& self, const std::string& name) {
    if (name == "items" || name == "keys" || name == "values") {
        return method(name, [self, name](CallArgs&) {
            std::vector<Value> out;
            for (const auto& [k, v] : self.dict_data().items) {
                if (name == "items")
                    out.push_back(Value::list({k, v}, true));
                else
                    out.push_back(name == "keys" ? k : v);
            }
            return Value::list(std::move(out));
        });
    }
    if (name == "get") {
        return method(name, [self](CallArgs& a) {
            ArgReader r(a, "get");
            if (!r.has(0, "key")) throw EvalError("get expected at least 1 argument, got 0");
            if (const Value* v = self.dict_data().find(r.get(0, "key"))) return *v;
            return r.get(1, "default", Value::none());
        });
    }
    if (name == "copy") {
        return method(name, [self](CallArgs&) {
            Value d = Value::dict();
            d.dict_data().items = self.dict_data().items;
            return d;
        });
    }
    return Value();
}

Value list_method(const Value& self, const std::string& name) {
    if (name == "append") {
        return method(name, [self](CallArgs& a) {
            if (self.is_tuple()) throw EvalError("'tuple' object has no attribute 'append'");
            if (a.pos.size() != 1) throw EvalError("append() takes exactly one argument");
            self.items().push_back(a.pos[0]);
            return Value::none();
        });
    }
    if (name == "extend") {
        return method(name, [self](CallArgs& a) {
            if (a.pos.size() != 1) throw EvalError("extend() takes exactly one argument");
            for (auto& v : iterate(a.pos[0])) self.items().push_back(v);
            return Value::none();
        });
    }
    if (name == "pop") {
        return method(name, [self](CallArgs& a) {
            auto& items = self.items();
            if (items.empty()) throw EvalError("pop from empty list");
            int64_t i = a.pos.empty() ? -1 : need_int(a.pos[0], "pop");
            if (i < 0) i += int64_t(items.size());
            if (i < 0 || i >= int64_t(items.size())) throw EvalError("pop index out of range");
            Value v = items[size_t(i)];
            items.erase(items.begin() + i);
            return v;
        });
    }
    if (name == "insert") {
        return method(name, [self](CallArgs& a) {
            if (a.pos.size() != 2) throw EvalError("insert expected 2 arguments");
            auto& items = self.items();
            int64_t n = int64_t(items.size());
            int64_t i = need_int(a.pos[0], "insert");
            if (i < 0) i = std::max<int64_t>(0, i + n);
            i = std::min(i, n);
            items.insert(items.begin() + i, a.pos[1]);
            return Value::none();
        });
    }
    if (name == "index" || name == "count") {
        return method(name, [self, name](CallArgs& a) {
            if (a.pos.size() != 1) throw EvalError(name + "() takes exactly one argument");
            int64_t count = 0;
            const auto& items = self.items();
            for (size_t i = 0; i < items.size(); ++i) {
                if (!py_equal(items[i], a.pos[0])) continue;
                if (name == "index") return Value::integer(int64_t(i));
                ++count;
            }
            if (name == "index") throw EvalError(a.pos[0].repr() + " is not in list");
            return Value::integer(count);
        });
    }
    if (name == "copy")
        return method(name,
                      [self](CallArgs&) { return Value::list(self.items(), self.is_tuple()); });
    return Value();
}

}  // namespace

Value bound_method(const Value& obj, const std::string& name) {
    if (obj.is_string()) return string_method(obj, name);
    if (obj.is_dict()) return dict_method(obj, name);
    if (obj.is_list()) return list_method(obj, name);
    return Value();
}

}  // namespace tandem::jinja
