#include "interpreter.h"

#include "utf8.h"

namespace tandem::jinja {
namespace {

// A `loop` object is a dict; recursive loops make it callable through this hidden key.
const char* const kCallKey = "\x01__call__";

std::string type_repr(const Value& obj) {
    if (obj.is_none()) return "None";
    return obj.type_name() + " object";
}

Value missing_attr(const Value& obj, const std::string& name) {
    return Value::undefined("'" + type_repr(obj) + "' has no attribute '" + name + "'");
}

Value missing_item(const Value& obj, const Value& key) {
    if (key.is_string()) return missing_attr(obj, key.str_data());
    return Value::undefined(type_repr(obj) + " has no element " + key.repr());
}

}  // namespace

void require_defined(const Value& v) {
    if (v.is_undefined())
        throw EvalError(v.str_data().empty() ? "value is undefined" : v.str_data());
}

std::vector<Value> iterate(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return {};
        case Value::Kind::List:
            return v.items();
        case Value::Kind::Dict: {
            std::vector<Value> keys;
            for (const auto& kv : v.dict_data().items) keys.push_back(kv.first);
            return keys;
        }
        case Value::Kind::String: {
            std::vector<Value> chars;
            for (char32_t c : utf8_decode(v.str_data()))
                chars.push_back(Value::string(utf8_encode(std::u32string(1, c))));
            return chars;
        }
        default:
            throw EvalError("'" + v.type_name() + "' object is not iterable");
    }
}

std::vector<Value> slice_items(const std::vector<Value>& items, const Value& start_v,
                               const Value& stop_v, const Value& step_v) {
    auto as_index = [](const Value& v, const char* what) -> int64_t {
        if (!v.is_int() && !v.is_bool())
            throw EvalError(std::string("slice ") + what + " must be an integer or None");
        return v.as_int();
    };
    int64_t n = int64_t(items.size());
    int64_t step = step_v.is_none() || step_v.is_undefined() ? 1 : as_index(step_v, "step");
    if (step == 0) throw EvalError("slice step cannot be zero");
    auto clamp = [&](const Value& v, int64_t def, const char* what) -> int64_t {
        if (v.is_none() || v.is_undefined()) return def;
        int64_t i = as_index(v, what);
        if (i < 0) i += n;
        if (step > 0) return std::clamp<int64_t>(i, 0, n);
        return std::clamp<int64_t>(i, -1, n - 1);
    };
    int64_t start = clamp(start_v, step > 0 ? 0 : n - 1, "start");
    int64_t stop = clamp(stop_v, step > 0 ? n : -1, "stop");
    std::vector<Value> out;
    if (step > 0) {
        for (int64_t i = start; i < stop; i += step) out.push_back(items[size_t(i)]);
    } else {
        for (int64_t i = start; i > stop; i += step) out.push_back(items[size_t(i)]);
    }
    return out;
}

Interpreter::Interpreter(const RenderOptions& options, const Value& context) : options_(options) {
    globals_ = std::make_shared<Scope>(nullptr);
    install_globals(*globals_, *this);
    root_ = std::make_shared<Scope>(globals_);
    if (context.is_dict()) {
        for (const auto& [k, v] : context.dict_data().items)
            if (k.is_string()) root_->vars[k.str_data()] = v;
    }
}

std::string Interpreter::render(const Body& body) {
    std::string out;
    exec_body(body, root_, out);
    return out;
}

void Interpreter::step() {
    if (++steps_ > options_.max_steps)
        throw EvalError("template ran too long (more than " + std::to_string(options_.max_steps) +
                        " steps)");
}

void Interpreter::append(std::string& out, const std::string& text) {
    if (out.size() + text.size() > options_.max_output_bytes)
        throw EvalError("template output exceeds " + std::to_string(options_.max_output_bytes) +
                        " bytes");
    out += text;
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const ScopePtr& scope,
                                         std::string& out) {
    for (const auto& node : body) {
        Flow f = exec(*node, scope, out);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Node& node, const ScopePtr& scope, std::string& out) {
    try {
        step();
        switch (node.kind) {
            case Node::Kind::Text:
                append(out, static_cast<const TextNode&>(node).text);
                break;
            case Node::Kind::Output:
                append(out, eval(*static_cast<const OutputNode&>(node).expr, scope).str());
                break;
            case Node::Kind::If: {
                const auto& n = static_cast<const IfNode&>(node);
                for (const auto& [cond, body] : n.branches)
                    if (eval(*cond, scope).truthy()) return exec_body(body, scope, out);
                return exec_body(n.otherwise, scope, out);
            }
            case Node::Kind::For: {
                const auto& n = static_cast<const ForNode&>(node);
                exec_for(n, scope, out, eval(*n.iter, scope), 0);
                break;
            }
            case Node::Kind::Set: {
                const auto& n = static_cast<const SetNode&>(node);
                assign(n.target, eval(*n.value, scope), scope);
                break;
            }
            case Node::Kind::SetBlock: {
                const auto& n = static_cast<const SetBlockNode&>(node);
                std::string buf;
                // Like Jinja2, the block body has its own scope: its `set`s stay inside.
                exec_body(n.body, std::make_shared<Scope>(scope), buf);
                Value v = Value::string(std::move(buf));
                if (n.filter)
                    v = apply_filter_expr(static_cast<const FilterExpr&>(*n.filter), v, scope);
                assign(n.target, v, scope);
                break;
            }
            case Node::Kind::Macro: {
                const auto& n = static_cast<const MacroNode&>(node);
                scope->vars[n.name] = make_macro(n.name, n.params, n.body, scope);
                break;
            }
            case Node::Kind::CallBlock:
                exec_call_block(static_cast<const CallBlockNode&>(node), scope, out);
                break;
            case Node::Kind::FilterBlock: {
                const auto& n = static_cast<const FilterBlockNode&>(node);
                std::string buf;
                exec_body(n.body, std::make_shared<Scope>(scope), buf);
                Value v = apply_filter_expr(static_cast<const FilterExpr&>(*n.filter),
                                            Value::string(std::move(buf)), scope);
                append(out, v.str());
                break;
            }
            case Node::Kind::With: {
                const auto& n = static_cast<const WithNode&>(node);
                auto inner = std::make_shared<Scope>(scope);
                for (const auto& [target, expr] : n.assignments)
                    assign(target, eval(*expr, scope), inner);
                return exec_body(n.body, inner, out);
            }
            case Node::Kind::Break:
                return Flow::Break;
            case Node::Kind::Continue:
                return Flow::Continue;
        }
    } catch (const EvalError& e) {
        throw TemplateError(e.what(), node.pos.line, node.pos.column);
    }
    return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_for(const ForNode& node, const ScopePtr& scope,
                                        std::string& out, const Value& iterable, int depth) {
    std::vector<Value> items = iterate(iterable);
    if (node.filter) {
        std::vector<Value> kept;
        for (auto& item : items) {
            step();
            auto tmp = std::make_shared<Scope>(scope);
            assign(node.target, item, tmp);
            if (eval(*node.filter, tmp).truthy()) kept.push_back(std::move(item));
        }
        items = std::move(kept);
    }
    const int64_t n = int64_t(items.size());
    bool completed_any = false;
    // One cycle() per loop, reading the current position.
    auto position = std::make_shared<int64_t>(0);
    Value cycle = Value::callable("cycle", [position](CallArgs& a) -> Value {
        if (a.pos.empty()) throw EvalError("no items for cycling given");
        return a.pos[size_t(*position) % a.pos.size()];
    });
    for (int64_t i = 0; i < n; ++i) {
        step();
        auto iter_scope = std::make_shared<Scope>(scope);
        // Built with push_back: the keys are distinct, so set()'s lookup would only cost time.
        Value loop = Value::dict();
        auto& d = loop.dict_data().items;
        d.reserve(14);
        auto put = [&d](const char* key, Value v) {
            d.emplace_back(Value::string(key), std::move(v));
        };
        put("index", Value::integer(i + 1));
        put("index0", Value::integer(i));
        put("revindex", Value::integer(n - i));
        put("revindex0", Value::integer(n - i - 1));
        put("first", Value::boolean(i == 0));
        put("last", Value::boolean(i == n - 1));
        put("length", Value::integer(n));
        put("depth", Value::integer(depth + 1));
        put("depth0", Value::integer(depth));
        if (i > 0) put("previtem", items[size_t(i - 1)]);
        if (i + 1 < n) put("nextitem", items[size_t(i + 1)]);
        *position = i;
        put("cycle", cycle);
        if (node.recursive) {
            std::weak_ptr<Scope> weak = scope;
            put(kCallKey, Value::callable("loop", [this, &node, weak, depth](CallArgs& a) -> Value {
                    if (a.pos.size() != 1) throw EvalError("loop() takes exactly one argument");
                    auto s = weak.lock();
                    if (!s) throw EvalError("recursive loop called after its loop ended");
                    std::string buf;
                    if (++call_depth_ > options_.max_call_depth) {
                        --call_depth_;
                        throw EvalError("recursion too deep");
                    }
                    try {
                        exec_for(node, s, buf, a.pos[0], depth + 1);
                    } catch (...) {
                        --call_depth_;
                        throw;
                    }
                    --call_depth_;
                    return Value::string(std::move(buf));
                }));
        }
        iter_scope->vars["loop"] = loop;
        assign(node.target, items[size_t(i)], iter_scope);
        Flow f = exec_body(node.body, iter_scope, out);
        if (f == Flow::Normal) completed_any = true;
        if (f == Flow::Break) break;
    }
    // Jinja2 clears its "no iteration" flag at the end of the loop body, so `else` also runs
    // when every iteration left early through break/continue. The else block has its own scope.
    if (!completed_any) exec_body(node.otherwise, std::make_shared<Scope>(scope), out);
    return Flow::Normal;
}

void Interpreter::exec_call_block(const CallBlockNode& node, const ScopePtr& scope,
                                  std::string& out) {
    const auto& call = static_cast<const CallExpr&>(*node.call);
    Value callee = eval(*call.callee, scope);
    CallArgs args;
    eval_args(call.args, scope, args);
    args.kw.emplace_back("caller", make_macro("caller", node.params, node.body, scope));
    append(out, this->call(callee, args).str());
}

void Interpreter::assign(const Target& target, const Value& value, const ScopePtr& scope) {
    if (!target.attr.empty()) {
        const Value* ns = scope->lookup(target.name);
        if (!ns || !ns->is_namespace())
            throw EvalError("cannot assign attribute '" + target.attr +
                            "' on non-namespace object '" + target.name + "'");
        ns->dict_data().set(Value::string(target.attr), value);
        return;
    }
    if (target.is_tuple) {
        std::vector<Value> items = iterate(value);
        if (items.size() != target.elements.size())
            throw EvalError(items.size() > target.elements.size()
                                ? "too many values to unpack (expected " +
                                      std::to_string(target.elements.size()) + ")"
                                : "not enough values to unpack (expected " +
                                      std::to_string(target.elements.size()) + ", got " +
                                      std::to_string(items.size()) + ")");
        for (size_t i = 0; i < items.size(); ++i) assign(target.elements[i], items[i], scope);
        return;
    }
    scope->vars[target.name] = value;
}

Value Interpreter::make_macro(const std::string& name,
                              const std::vector<std::pair<std::string, ExprPtr>>& params,
                              const Body& body, const ScopePtr& defining_scope) {
    // A weak reference: the scope may hold this macro, and a cycle would leak both.
    std::weak_ptr<Scope> weak = defining_scope;
    return Value::callable(name, [this, &name, &params, &body, weak](CallArgs& a) -> Value {
        if (call_depth_ >= options_.max_call_depth)
            throw EvalError("macro '" + name + "' nested deeper than " +
                            std::to_string(options_.max_call_depth) + " calls");
        ScopePtr parent = weak.lock();
        auto s = std::make_shared<Scope>(parent ? parent : root_);
        std::vector<bool> kw_used(a.kw.size(), false);
        for (size_t i = 0; i < params.size(); ++i) {
            const auto& [pname, def] = params[i];
            bool bound = false;
            if (i < a.pos.size()) {
                s->vars[pname] = a.pos[i];
                bound = true;
            }
            for (size_t k = 0; k < a.kw.size(); ++k) {
                if (a.kw[k].first != pname) continue;
                if (bound)
                    throw EvalError("macro '" + name + "' got multiple values for argument '" +
                                    pname + "'");
                s->vars[pname] = a.kw[k].second;
                kw_used[k] = true;
                bound = true;
            }
            if (!bound)
                s->vars[pname] =
                    def ? eval(*def, s)
                        : Value::undefined("parameter '" + pname + "' was not provided");
        }
        std::vector<Value> extra;
        for (size_t i = params.size(); i < a.pos.size(); ++i) extra.push_back(a.pos[i]);
        s->vars["varargs"] = Value::list(std::move(extra), true);
        Value kwargs = Value::dict();
        for (size_t k = 0; k < a.kw.size(); ++k) {
            if (kw_used[k]) continue;
            if (a.kw[k].first == "caller") {
                s->vars["caller"] = a.kw[k].second;
                continue;
            }
            kwargs.dict_data().set(Value::string(a.kw[k].first), a.kw[k].second);
        }
        s->vars["kwargs"] = kwargs;
        std::string buf;
        ++call_depth_;
        try {
            exec_body(body, s, buf);
        } catch (...) {
            --call_depth_;
            throw;
        }
        --call_depth_;
        return Value::string(std::move(buf));
    });
}

Value Interpreter::eval(const Expr& expr, const ScopePtr& scope) {
    try {
        return eval_inner(expr, scope);
    } catch (const EvalError& e) {
        throw TemplateError(e.what(), expr.pos.line, expr.pos.column);
    }
}

void Interpreter::eval_args(const Args& args, const ScopePtr& scope, CallArgs& out) {
    for (const auto& e : args.pos) out.pos.push_back(eval(*e, scope));
    if (args.star) {
        for (auto& v : iterate(eval(*args.star, scope))) out.pos.push_back(v);
    }
    for (const auto& [k, e] : args.kw) out.kw.emplace_back(k, eval(*e, scope));
    if (args.star_star) {
        Value d = eval(*args.star_star, scope);
        if (!d.is_dict())
            throw EvalError("argument after ** must be a mapping, not " + d.type_name());
        for (const auto& [k, v] : d.dict_data().items) out.kw.emplace_back(k.str(), v);
    }
}

Value Interpreter::apply_filter_expr(const FilterExpr& f, Value operand, const ScopePtr& scope) {
    Value base = f.operand ? (f.operand->kind == Expr::Kind::Filter
                                  ? apply_filter_expr(static_cast<const FilterExpr&>(*f.operand),
                                                      std::move(operand), scope)
                                  : eval(*f.operand, scope))
                           : std::move(operand);
    CallArgs args;
    eval_args(f.args, scope, args);
    try {
        return filter(f.name, base, args);
    } catch (const EvalError& e) {
        throw TemplateError(e.what(), f.pos.line, f.pos.column);
    }
}

Value Interpreter::filter(const std::string& name, const Value& operand, CallArgs& args) {
    step();
    return apply_filter(*this, name, operand, args);
}

bool Interpreter::test(const std::string& name, const Value& operand, CallArgs& args) {
    step();
    return apply_test(*this, name, operand, args);
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
    step();
    if (callee.is_callable()) return callee.callable_data().fn(args);
    if (callee.is_dict()) {
        if (const Value* fn = callee.dict_data().find(std::string_view(kCallKey));
            fn && fn->is_callable())
            return fn->callable_data().fn(args);
    }
    require_defined(callee);
    throw EvalError("'" + callee.type_name() + "' object is not callable");
}

Value Interpreter::getattr(const Value& obj, const std::string& name) {
    require_defined(obj);
    if (obj.is_namespace()) {
        if (const Value* v = obj.dict_data().find(std::string_view(name))) return *v;
        return missing_attr(obj, name);
    }
    if (obj.is_dict() || obj.is_string() || obj.is_list()) {
        Value m = bound_method(obj, name);
        if (!m.is_undefined()) return m;
        if (obj.is_dict()) {
            if (const Value* v = obj.dict_data().find(std::string_view(name))) return *v;
        }
    }
    return missing_attr(obj, name);
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
    require_defined(obj);
    require_defined(key);
    if (obj.is_dict() || obj.is_namespace()) {
        if (const Value* v = obj.dict_data().find(key)) return *v;
        if (key.is_string() && obj.is_dict()) {
            Value m = bound_method(obj, key.str_data());
            if (!m.is_undefined()) return m;
        }
        return missing_item(obj, key);
    }
    if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
        int64_t i = key.as_int();
        if (obj.is_list()) {
            int64_t n = int64_t(obj.items().size());
            if (i < 0) i += n;
            if (i < 0 || i >= n) return missing_item(obj, key);
            return obj.items()[size_t(i)];
        }
        std::u32string s = utf8_decode(obj.str_data());
        int64_t n = int64_t(s.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return missing_item(obj, key);
        return Value::string(utf8_encode(s.substr(size_t(i), 1)));
    }
    if (key.is_string()) return getattr(obj, key.str_data());
    return missing_item(obj, key);
}

Value Interpreter::eval_inner(const Expr& expr, const ScopePtr& scope) {
    switch (expr.kind) {
        case Expr::Kind::Literal:
            return static_cast<const LiteralExpr&>(expr).value;
        case Expr::Kind::Name: {
            const auto& name = static_cast<const NameExpr&>(expr).name;
            if (const Value* v = scope->lookup(name)) return *v;
            return Value::undefined("'" + name + "' is undefined");
        }
        case Expr::Kind::List: {
            const auto& e = static_cast<const ListExpr&>(expr);
            std::vector<Value> items;
            items.reserve(e.items.size());
            for (const auto& item : e.items) items.push_back(eval(*item, scope));
            return Value::list(std::move(items), e.tuple);
        }
        case Expr::Kind::Dict: {
            const auto& e = static_cast<const DictExpr&>(expr);
            Value d = Value::dict();
            for (const auto& [k, v] : e.items) {
                Value key = eval(*k, scope);
                if (key.is_list() && !key.is_tuple()) throw EvalError("unhashable type: 'list'");
                if (key.is_dict()) throw EvalError("unhashable type: 'dict'");
                d.dict_data().set(std::move(key), eval(*v, scope));
            }
            return d;
        }
        case Expr::Kind::GetAttr: {
            const auto& e = static_cast<const GetAttrExpr&>(expr);
            return getattr(eval(*e.obj, scope), e.name);
        }
        case Expr::Kind::GetItem: {
            const auto& e = static_cast<const GetItemExpr&>(expr);
            Value obj = eval(*e.obj, scope);
            if (e.index->kind == Expr::Kind::Slice) {
                const auto& s = static_cast<const SliceExpr&>(*e.index);
                Value start = s.start ? eval(*s.start, scope) : Value::none();
                Value stop = s.stop ? eval(*s.stop, scope) : Value::none();
                Value step = s.step ? eval(*s.step, scope) : Value::none();
                require_defined(obj);
                if (obj.is_list())
                    return Value::list(slice_items(obj.items(), start, stop, step), obj.is_tuple());
                if (obj.is_string()) {
                    std::vector<Value> chars = iterate(obj);
                    std::string out;
                    for (const auto& c : slice_items(chars, start, stop, step)) out += c.str_data();
                    return Value::string(std::move(out));
                }
                // Jinja2 compiles a slice to a plain Python subscript, so this is a TypeError.
                if (obj.is_dict()) throw EvalError("unhashable type: 'slice'");
                throw EvalError("'" + obj.type_name() + "' object is not subscriptable");
            }
            return getitem(obj, eval(*e.index, scope));
        }
        case Expr::Kind::Slice:
            throw EvalError("a slice is only valid inside []");
        case Expr::Kind::Call: {
            const auto& e = static_cast<const CallExpr&>(expr);
            Value callee = eval(*e.callee, scope);
            CallArgs args;
            eval_args(e.args, scope, args);
            return call(callee, args);
        }
        case Expr::Kind::Filter:
            return apply_filter_expr(static_cast<const FilterExpr&>(expr), Value(), scope);
        case Expr::Kind::Test: {
            const auto& e = static_cast<const TestExpr&>(expr);
            Value operand = eval(*e.operand, scope);
            CallArgs args;
            eval_args(e.args, scope, args);
            return Value::boolean(test(e.name, operand, args));
        }
        case Expr::Kind::Unary: {
            const auto& e = static_cast<const UnaryExpr&>(expr);
            Value v = eval(*e.operand, scope);
            if (e.op == "not") return Value::boolean(!v.truthy());
            require_defined(v);
            if (!v.is_number())
                throw EvalError("bad operand type for unary " + e.op + ": '" + v.type_name() + "'");
            if (e.op == "+") return v.is_bool() ? Value::integer(v.as_int()) : v;
            if (v.is_float()) return Value::real(-v.as_double());
            if (v.as_int() == INT64_MIN) throw EvalError("integer overflow");
            return Value::integer(-v.as_int());
        }
        case Expr::Kind::Binary: {
            const auto& e = static_cast<const BinaryExpr&>(expr);
            Value left = eval(*e.left, scope);
            if (e.op == "and") return left.truthy() ? eval(*e.right, scope) : left;
            if (e.op == "or") return left.truthy() ? left : eval(*e.right, scope);
            return binary_op(e.op, left, eval(*e.right, scope));
        }
        case Expr::Kind::Compare: {
            const auto& e = static_cast<const CompareExpr&>(expr);
            Value left = eval(*e.first, scope);
            for (const auto& [op, rhs] : e.ops) {
                Value right = eval(*rhs, scope);
                if (!compare_op(op, left, right)) return Value::boolean(false);
                left = std::move(right);
            }
            return Value::boolean(true);
        }
        case Expr::Kind::Cond: {
            const auto& e = static_cast<const CondExpr&>(expr);
            if (eval(*e.cond, scope).truthy()) return eval(*e.then, scope);
            if (e.otherwise) return eval(*e.otherwise, scope);
            return Value::undefined("the inline if-expression on line " +
                                    std::to_string(e.pos.line) +
                                    " evaluated to false and no else section was defined.");
        }
    }
    return Value();
}

Value ArgReader::get(size_t index, const char* name, Value def) const {
    if (index < args_.pos.size()) return args_.pos[index];
    for (const auto& [k, v] : args_.kw)
        if (k == name) return v;
    return def;
}

bool ArgReader::has(size_t index, const char* name) const {
    if (index < args_.pos.size()) return true;
    for (const auto& [k, v] : args_.kw)
        if (k == name) return true;
    return false;
}

}  // namespace tandem::jinja
