#pragma once
// Executes a parsed template against a context. Scoping follows Jinja2: `if` shares its
// enclosing scope, each `for` iteration and each macro call gets its own (so `set` inside a loop
// does not leak out, which is why templates use namespace()), top-level `set` is global.
#include <memory>
#include <string>
#include <unordered_map>

#include "ast.h"
#include "tandem/template/template.h"
#include "value.h"

namespace tandem::jinja {

struct Scope {
    explicit Scope(std::shared_ptr<Scope> p) : parent(std::move(p)) {}
    std::shared_ptr<Scope> parent;
    std::unordered_map<std::string, Value> vars;

    const Value* lookup(const std::string& name) const {
        for (const Scope* s = this; s; s = s->parent.get()) {
            auto it = s->vars.find(name);
            if (it != s->vars.end()) return &it->second;
        }
        return nullptr;
    }
};
using ScopePtr = std::shared_ptr<Scope>;

class Interpreter {
  public:
    Interpreter(const RenderOptions& options, const Value& context);
    std::string render(const Body& body);

    // Used by filters, tests and globals.
    Value getattr(const Value& obj, const std::string& name);
    Value getitem(const Value& obj, const Value& key);
    Value call(const Value& callee, CallArgs& args);
    Value filter(const std::string& name, const Value& operand, CallArgs& args);
    bool test(const std::string& name, const Value& operand, CallArgs& args);
    const RenderOptions& options() const { return options_; }
    void step();  // counts work against max_steps

  private:
    enum class Flow { Normal, Break, Continue };

    Flow exec_body(const Body& body, const ScopePtr& scope, std::string& out);
    Flow exec(const Node& node, const ScopePtr& scope, std::string& out);
    Flow exec_for(const ForNode& node, const ScopePtr& scope, std::string& out,
                  const Value& iterable, int depth);
    void exec_call_block(const CallBlockNode& node, const ScopePtr& scope, std::string& out);
    Value eval(const Expr& expr, const ScopePtr& scope);
    Value eval_inner(const Expr& expr, const ScopePtr& scope);
    void eval_args(const Args& args, const ScopePtr& scope, CallArgs& out);
    Value apply_filter_expr(const FilterExpr& f, Value operand, const ScopePtr& scope);
    void assign(const Target& target, const Value& value, const ScopePtr& scope);
    Value make_macro(const std::string& name,
                     const std::vector<std::pair<std::string, ExprPtr>>& params, const Body& body,
                     const ScopePtr& defining_scope);
    void append(std::string& out, const std::string& text);

    RenderOptions options_;
    ScopePtr globals_;
    ScopePtr root_;
    size_t steps_ = 0;
    int call_depth_ = 0;
};

// Builtins (filters.cpp, tests.cpp, methods.cpp, globals.cpp, operators.cpp, json_dump.cpp).
Value apply_filter(Interpreter& in, const std::string& name, const Value& operand, CallArgs& args);
bool apply_test(Interpreter& in, const std::string& name, const Value& operand, CallArgs& args);
// A bound method of a str/dict/list (e.g. "strip", "items", "append"); Undefined when none.
Value bound_method(const Value& obj, const std::string& name);
void install_globals(Scope& globals, Interpreter& in);
Value binary_op(const std::string& op, const Value& a, const Value& b);
bool compare_op(const std::string& op, const Value& a, const Value& b);
// json.dumps(value, ensure_ascii=..., indent=indent (-1: none), separators=..., sort_keys=...).
std::string to_json(const Value& v, int indent, bool sort_keys, const std::string& item_sep,
                    const std::string& key_sep, bool ensure_ascii = false);
// A list of the items iteration yields (list items, dict keys, string characters).
std::vector<Value> iterate(const Value& v);
// Fails with the Undefined's message when v is undefined (using it as a value is an error).
void require_defined(const Value& v);
// Python-style index normalisation for slicing.
std::vector<Value> slice_items(const std::vector<Value>& items, const Value& start,
                               const Value& stop, const Value& step);

// Reads call arguments by position or keyword, Python style.
class ArgReader {
  public:
    ArgReader(CallArgs& args, std::string fn) : args_(args), fn_(std::move(fn)) {}
    // The argument at `index` (positional) or named `name`; `def` when neither was passed.
    Value get(size_t index, const char* name, Value def = Value()) const;
    bool has(size_t index, const char* name) const;
    const std::string& fn() const { return fn_; }

  private:
    CallArgs& args_;
    std::string fn_;
};

}  // namespace tandem::jinja
