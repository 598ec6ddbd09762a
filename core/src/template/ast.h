#pragma once
// Syntax tree of a parsed template: expressions (Expr) and statements (Node). Each carries the
// position it came from so runtime errors can point at the template line.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lexer.h"
#include "value.h"

namespace tandem::jinja {

struct Expr {
    enum class Kind {
        Literal,
        Name,
        List,
        Dict,
        GetAttr,
        GetItem,
        Slice,
        Call,
        Filter,
        Test,
        Unary,
        Binary,
        Compare,
        Cond,
    };
    explicit Expr(Kind k, Pos p) : kind(k), pos(p) {}
    virtual ~Expr() = default;
    Kind kind;
    Pos pos;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Args {
    std::vector<ExprPtr> pos;
    std::vector<std::pair<std::string, ExprPtr>> kw;
    ExprPtr star;       // *args
    ExprPtr star_star;  // **kwargs
};

struct LiteralExpr : Expr {
    LiteralExpr(Pos p, Value v) : Expr(Kind::Literal, p), value(std::move(v)) {}
    Value value;
};
struct NameExpr : Expr {
    NameExpr(Pos p, std::string n) : Expr(Kind::Name, p), name(std::move(n)) {}
    std::string name;
};
struct ListExpr : Expr {  // [a, b] or (a, b)
    ListExpr(Pos p, bool t) : Expr(Kind::List, p), tuple(t) {}
    std::vector<ExprPtr> items;
    bool tuple;
};
struct DictExpr : Expr {
    explicit DictExpr(Pos p) : Expr(Kind::Dict, p) {}
    std::vector<std::pair<ExprPtr, ExprPtr>> items;
};
struct GetAttrExpr : Expr {  // obj.name
    GetAttrExpr(Pos p, ExprPtr o, std::string n)
        : Expr(Kind::GetAttr, p), obj(std::move(o)), name(std::move(n)) {}
    ExprPtr obj;
    std::string name;
};
struct GetItemExpr : Expr {  // obj[index]; index may be a SliceExpr
    GetItemExpr(Pos p, ExprPtr o, ExprPtr i)
        : Expr(Kind::GetItem, p), obj(std::move(o)), index(std::move(i)) {}
    ExprPtr obj, index;
};
struct SliceExpr : Expr {  // start:stop:step, each optional
    explicit SliceExpr(Pos p) : Expr(Kind::Slice, p) {}
    ExprPtr start, stop, step;
};
struct CallExpr : Expr {
    CallExpr(Pos p, ExprPtr c) : Expr(Kind::Call, p), callee(std::move(c)) {}
    ExprPtr callee;
    Args args;
};
struct FilterExpr : Expr {  // operand | name(args); operand is null inside a filter block
    FilterExpr(Pos p, ExprPtr o, std::string n)
        : Expr(Kind::Filter, p), operand(std::move(o)), name(std::move(n)) {}
    ExprPtr operand;
    std::string name;
    Args args;
};
struct TestExpr : Expr {  // operand is [not] name(args)
    TestExpr(Pos p, ExprPtr o, std::string n)
        : Expr(Kind::Test, p), operand(std::move(o)), name(std::move(n)) {}
    ExprPtr operand;
    std::string name;
    Args args;
};
struct UnaryExpr : Expr {  // op: "not", "-", "+"
    UnaryExpr(Pos p, std::string o, ExprPtr e)
        : Expr(Kind::Unary, p), op(std::move(o)), operand(std::move(e)) {}
    std::string op;
    ExprPtr operand;
};
struct BinaryExpr : Expr {  // op: and or + - * / // % ** ~
    BinaryExpr(Pos p, std::string o, ExprPtr l, ExprPtr r)
        : Expr(Kind::Binary, p), op(std::move(o)), left(std::move(l)), right(std::move(r)) {}
    std::string op;
    ExprPtr left, right;
};
struct CompareExpr
    : Expr {  // first op1 x1 op2 x2 ... (chained like Python); ops: == != < <= > >= in notin
    CompareExpr(Pos p, ExprPtr f) : Expr(Kind::Compare, p), first(std::move(f)) {}
    ExprPtr first;
    std::vector<std::pair<std::string, ExprPtr>> ops;
};
struct CondExpr : Expr {  // then if cond else otherwise (otherwise may be null: undefined)
    CondExpr(Pos p, ExprPtr c, ExprPtr t, ExprPtr o)
        : Expr(Kind::Cond, p), cond(std::move(c)), then(std::move(t)), otherwise(std::move(o)) {}
    ExprPtr cond, then, otherwise;
};

// An assignment target: a name, `ns.attr`, or a (possibly nested) tuple of names.
struct Target {
    std::string name;              // when a plain name or namespace ref
    std::string attr;              // non-empty for `name.attr`
    std::vector<Target> elements;  // non-empty for a tuple
    bool is_tuple = false;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
    enum class Kind {
        Text,
        Output,
        If,
        For,
        Set,
        SetBlock,
        Macro,
        CallBlock,
        FilterBlock,
        With,
        Break,
        Continue
    };
    Node(Kind k, Pos p) : kind(k), pos(p) {}
    virtual ~Node() = default;
    Kind kind;
    Pos pos;
};

struct TextNode : Node {
    TextNode(Pos p, std::string t) : Node(Kind::Text, p), text(std::move(t)) {}
    std::string text;
};
struct OutputNode : Node {
    OutputNode(Pos p, ExprPtr e) : Node(Kind::Output, p), expr(std::move(e)) {}
    ExprPtr expr;
};
struct IfNode : Node {
    explicit IfNode(Pos p) : Node(Kind::If, p) {}
    std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif...
    Body otherwise;
};
struct ForNode : Node {
    explicit ForNode(Pos p) : Node(Kind::For, p) {}
    Target target;
    ExprPtr iter;
    ExprPtr filter;  // `for x in xs if cond`
    Body body, otherwise;
    bool recursive = false;
};
struct SetNode : Node {
    explicit SetNode(Pos p) : Node(Kind::Set, p) {}
    Target target;
    ExprPtr value;
};
struct SetBlockNode : Node {  // {% set name | filters %}body{% endset %}
    explicit SetBlockNode(Pos p) : Node(Kind::SetBlock, p) {}
    Target target;
    ExprPtr filter;  // FilterExpr chain with a null innermost operand, or null
    Body body;
};
struct MacroNode : Node {
    explicit MacroNode(Pos p) : Node(Kind::Macro, p) {}
    std::string name;
    std::vector<std::pair<std::string, ExprPtr>> params;  // default may be null
    Body body;
};
struct CallBlockNode : Node {  // {% call(params) macro(args) %}body{% endcall %}
    explicit CallBlockNode(Pos p) : Node(Kind::CallBlock, p) {}
    ExprPtr call;  // a CallExpr
    std::vector<std::pair<std::string, ExprPtr>> params;
    Body body;
};
struct FilterBlockNode : Node {
    explicit FilterBlockNode(Pos p) : Node(Kind::FilterBlock, p) {}
    ExprPtr filter;  // FilterExpr chain with a null innermost operand
    Body body;
};
struct WithNode : Node {
    explicit WithNode(Pos p) : Node(Kind::With, p) {}
    std::vector<std::pair<Target, ExprPtr>> assignments;
    Body body;
};
struct LoopControlNode : Node {  // break / continue
    LoopControlNode(Kind k, Pos p) : Node(k, p) {}
};

}  // namespace tandem::jinja
