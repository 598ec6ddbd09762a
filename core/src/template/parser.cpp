#include "parser.h"

#include <initializer_list>
#include <string_view>

#include "tandem/template/template.h"

namespace tandem::jinja {
namespace {

// Nesting deeper than this is not a chat template but an attack on the stack.
constexpr int kMaxNesting = 256;

std::string describe(const Token& t) {
    switch (t.type) {
        case Tok::Text:
            return "template data";
        case Tok::VarBegin:
            return "'{{'";
        case Tok::VarEnd:
            return "end of print statement";
        case Tok::BlockBegin:
            return "'{%'";
        case Tok::BlockEnd:
            return "end of statement block";
        case Tok::Name:
            return "'" + t.text + "'";
        case Tok::String:
            return "string";
        case Tok::Int:
        case Tok::Float:
            return "number " + t.text;
        case Tok::Op:
            return "'" + t.text + "'";
        case Tok::Eof:
            return "end of template";
    }
    return "token";
}

class Parser {
  public:
    explicit Parser(const std::vector<Token>& t) : toks_(t) {}

    Body parse_template() {
        Body body = parse_body({});
        if (cur().type != Tok::Eof) fail("unexpected " + describe(cur()));
        return body;
    }

  private:
    struct DepthGuard {
        explicit DepthGuard(Parser& p) : p_(p) {
            if (++p_.depth_ > kMaxNesting) p_.fail("template nested too deeply");
        }
        ~DepthGuard() { --p_.depth_; }
        Parser& p_;
    };

    const Token& cur() const { return toks_[i_]; }
    const Token& peek(size_t n = 1) const { return toks_[std::min(i_ + n, toks_.size() - 1)]; }
    void advance() {
        if (i_ + 1 < toks_.size()) ++i_;
    }
    [[noreturn]] void fail(const std::string& msg) const { fail_at(msg, cur().pos); }
    [[noreturn]] void fail_at(const std::string& msg, Pos p) const {
        throw TemplateError(msg, p.line, p.column);
    }

    bool is_op(std::string_view op) const { return cur().type == Tok::Op && cur().text == op; }
    bool is_name(std::string_view n) const { return cur().type == Tok::Name && cur().text == n; }
    bool skip_op(std::string_view op) {
        if (!is_op(op)) return false;
        advance();
        return true;
    }
    bool skip_name(std::string_view n) {
        if (!is_name(n)) return false;
        advance();
        return true;
    }
    void expect_op(std::string_view op) {
        if (!skip_op(op)) fail("expected '" + std::string(op) + "', got " + describe(cur()));
    }
    std::string expect_name() {
        if (cur().type != Tok::Name) fail("expected a name, got " + describe(cur()));
        std::string n = cur().text;
        advance();
        return n;
    }
    void expect_block_end() {
        if (cur().type != Tok::BlockEnd)
            fail("expected end of statement block, got " + describe(cur()));
        advance();
    }

    // Statements until `{% <one of end_tags>`, leaving the position on that tag's name.
    Body parse_body(std::initializer_list<std::string_view> end_tags) {
        Body body;
        while (true) {
            const Token& t = cur();
            if (t.type == Tok::Eof) {
                if (end_tags.size() != 0)
                    fail("unexpected end of template, expected '" + std::string(*end_tags.begin()) +
                         "'");
                return body;
            }
            if (t.type == Tok::Text) {
                body.push_back(std::make_unique<TextNode>(t.pos, t.text));
                advance();
            } else if (t.type == Tok::VarBegin) {
                Pos p = t.pos;
                advance();
                ExprPtr e = parse_tuple(true, false);
                if (cur().type != Tok::VarEnd)
                    fail("expected end of print statement, got " + describe(cur()));
                advance();
                body.push_back(std::make_unique<OutputNode>(p, std::move(e)));
            } else if (t.type == Tok::BlockBegin) {
                const Token& name = peek();
                if (name.type != Tok::Name) {
                    advance();
                    fail("expected a statement name, got " + describe(cur()));
                }
                for (auto e : end_tags)
                    if (name.text == e) {
                        advance();
                        return body;
                    }
                advance();
                body.push_back(parse_statement());
            } else {
                fail("unexpected " + describe(t));
            }
        }
    }

    NodePtr parse_statement() {
        DepthGuard guard(*this);
        Pos p = cur().pos;
        std::string tag = cur().text;
        advance();
        if (tag == "if") return parse_if(p);
        if (tag == "for") return parse_for(p);
        if (tag == "set") return parse_set(p);
        if (tag == "macro") return parse_macro(p);
        if (tag == "call") return parse_call_block(p);
        if (tag == "filter") return parse_filter_block(p);
        if (tag == "with") return parse_with(p);
        if (tag == "generation") {  // transformers' assistant-mask marker: renders its body
            expect_block_end();
            auto node = std::make_unique<WithNode>(p);
            node->body = parse_body({"endgeneration"});
            advance();
            expect_block_end();
            return node;
        }
        if (tag == "break" || tag == "continue") {
            if (loop_depth_ == 0) fail_at("'" + tag + "' outside of a loop", p);
            expect_block_end();
            return std::make_unique<LoopControlNode>(
                tag == "break" ? Node::Kind::Break : Node::Kind::Continue, p);
        }
        fail_at("unknown or unsupported statement '" + tag + "'", p);
    }

    NodePtr parse_if(Pos p) {
        auto node = std::make_unique<IfNode>(p);
        ExprPtr cond = parse_tuple(true, false);
        expect_block_end();
        while (true) {
            Body body = parse_body({"elif", "else", "endif"});
            node->branches.emplace_back(std::move(cond), std::move(body));
            std::string tag = cur().text;
            advance();
            if (tag == "elif") {
                cond = parse_tuple(true, false);
                expect_block_end();
                continue;
            }
            if (tag == "else") {
                expect_block_end();
                node->otherwise = parse_body({"endif"});
                advance();
            }
            expect_block_end();
            return node;
        }
    }

    NodePtr parse_for(Pos p) {
        auto node = std::make_unique<ForNode>(p);
        node->target = parse_assign_target(false);
        if (!skip_name("in")) fail("expected 'in', got " + describe(cur()));
        node->iter = parse_tuple(false, false, "recursive");
        if (skip_name("if")) node->filter = parse_expression(true);
        if (skip_name("recursive")) node->recursive = true;
        expect_block_end();
        ++loop_depth_;
        node->body = parse_body({"endfor", "else"});
        --loop_depth_;
        if (cur().text == "else") {
            advance();
            expect_block_end();
            node->otherwise = parse_body({"endfor"});
        }
        advance();
        expect_block_end();
        return node;
    }

    NodePtr parse_set(Pos p) {
        Target target = parse_assign_target(true);
        if (skip_op("=")) {
            auto node = std::make_unique<SetNode>(p);
            node->target = std::move(target);
            node->value = parse_tuple(true, false);
            expect_block_end();
            return node;
        }
        if (target.is_tuple || !target.attr.empty()) fail("a block set takes a single name");
        auto node = std::make_unique<SetBlockNode>(p);
        node->target = std::move(target);
        if (is_op("|")) node->filter = parse_filter_chain(nullptr);
        expect_block_end();
        int saved = loop_depth_;
        loop_depth_ = 0;
        node->body = parse_body({"endset"});
        loop_depth_ = saved;
        advance();
        expect_block_end();
        return node;
    }

    void parse_signature(std::vector<std::pair<std::string, ExprPtr>>& params) {
        expect_op("(");
        while (!is_op(")")) {
            if (!params.empty()) expect_op(",");
            if (is_op(")")) break;
            std::string name = expect_name();
            ExprPtr def;
            if (skip_op("=")) def = parse_expression(true);
            params.emplace_back(std::move(name), std::move(def));
        }
        advance();
    }

    NodePtr parse_macro(Pos p) {
        auto node = std::make_unique<MacroNode>(p);
        node->name = expect_name();
        parse_signature(node->params);
        expect_block_end();
        int saved = loop_depth_;
        loop_depth_ = 0;
        node->body = parse_body({"endmacro"});
        loop_depth_ = saved;
        advance();
        if (cur().type == Tok::Name) advance();  // {% endmacro name %}
        expect_block_end();
        return node;
    }

    NodePtr parse_call_block(Pos p) {
        auto node = std::make_unique<CallBlockNode>(p);
        if (is_op("(")) parse_signature(node->params);
        node->call = parse_expression(true);
        if (node->call->kind != Expr::Kind::Call)
            fail_at("expected a call after 'call'", node->call->pos);
        expect_block_end();
        int saved = loop_depth_;
        loop_depth_ = 0;
        node->body = parse_body({"endcall"});
        loop_depth_ = saved;
        advance();
        expect_block_end();
        return node;
    }

    NodePtr parse_filter_block(Pos p) {
        auto node = std::make_unique<FilterBlockNode>(p);
        node->filter = parse_filter_chain(nullptr, false);
        expect_block_end();
        node->body = parse_body({"endfilter"});
        advance();
        expect_block_end();
        return node;
    }

    NodePtr parse_with(Pos p) {
        auto node = std::make_unique<WithNode>(p);
        while (cur().type != Tok::BlockEnd) {
            if (!node->assignments.empty()) expect_op(",");
            Target t = parse_assign_target(false);
            expect_op("=");
            node->assignments.emplace_back(std::move(t), parse_expression(true));
        }
        expect_block_end();
        node->body = parse_body({"endwith"});
        advance();
        expect_block_end();
        return node;
    }

    Target parse_name_target() {
        Target t;
        if (skip_op("(")) {
            t = parse_target_tuple();
            t.is_tuple = true;
            expect_op(")");
            return t;
        }
        t.name = expect_name();
        return t;
    }

    Target parse_target_tuple() {
        Target t;
        while (true) {
            if (!t.elements.empty()) {
                if (!skip_op(",")) break;
                if (is_op("=") || is_op(")") || is_name("in")) break;
            }
            t.elements.push_back(parse_name_target());
        }
        return t;
    }

    Target parse_assign_target(bool with_namespace) {
        if (with_namespace && cur().type == Tok::Name && peek().type == Tok::Op &&
            peek().text == ".") {
            Target t;
            t.name = expect_name();
            advance();
            t.attr = expect_name();
            return t;
        }
        Target t = parse_target_tuple();
        if (t.elements.size() == 1 &&
            !(toks_[i_ - 1].type == Tok::Op && toks_[i_ - 1].text == ",")) {
            Target single = std::move(t.elements[0]);
            return single;
        }
        t.is_tuple = true;
        return t;
    }

    // Jinja2's parse_tuple: an expression, or a tuple when commas separate several.
    ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens, std::string_view extra_end = {}) {
        Pos p = cur().pos;
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) expect_op(",");
            if (cur().type == Tok::VarEnd || cur().type == Tok::BlockEnd || is_op(")") ||
                (!extra_end.empty() && is_name(extra_end)))
                break;
            items.push_back(parse_expression(with_condexpr));
            if (is_op(",")) {
                is_tuple = true;
            } else {
                break;
            }
        }
        if (!is_tuple) {
            if (!items.empty()) return std::move(items[0]);
            if (!explicit_parens) fail("expected an expression, got " + describe(cur()));
        }
        auto t = std::make_unique<ListExpr>(p, true);
        t->items = std::move(items);
        return t;
    }

    ExprPtr parse_expression(bool with_condexpr) {
        DepthGuard guard(*this);
        return with_condexpr ? parse_condexpr() : parse_or();
    }

    ExprPtr parse_condexpr() {
        Pos p = cur().pos;
        ExprPtr e = parse_or();
        while (skip_name("if")) {
            ExprPtr cond = parse_or();
            ExprPtr otherwise;
            if (skip_name("else")) otherwise = parse_condexpr();
            e = std::make_unique<CondExpr>(p, std::move(cond), std::move(e), std::move(otherwise));
        }
        return e;
    }

    ExprPtr parse_or() {
        Pos p = cur().pos;
        ExprPtr e = parse_and();
        while (skip_name("or"))
            e = std::make_unique<BinaryExpr>(p, "or", std::move(e), parse_and());
        return e;
    }

    ExprPtr parse_and() {
        Pos p = cur().pos;
        ExprPtr e = parse_not();
        while (skip_name("and"))
            e = std::make_unique<BinaryExpr>(p, "and", std::move(e), parse_not());
        return e;
    }

    ExprPtr parse_not() {
        Pos p = cur().pos;
        if (skip_name("not")) {
            DepthGuard guard(*this);
            return std::make_unique<UnaryExpr>(p, "not", parse_not());
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        Pos p = cur().pos;
        ExprPtr first = parse_math1();
        std::unique_ptr<CompareExpr> cmp;
        while (true) {
            std::string op;
            if (cur().type == Tok::Op &&
                (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                 cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
                op = cur().text;
                advance();
            } else if (skip_name("in")) {
                op = "in";
            } else if (is_name("not") && peek().type == Tok::Name && peek().text == "in") {
                advance();
                advance();
                op = "notin";
            } else {
                break;
            }
            if (!cmp) cmp = std::make_unique<CompareExpr>(p, std::move(first));
            cmp->ops.emplace_back(op, parse_math1());
        }
        if (cmp) return cmp;
        return first;
    }

    ExprPtr parse_math1() {
        Pos p = cur().pos;
        ExprPtr e = parse_concat();
        while (is_op("+") || is_op("-")) {
            std::string op = cur().text;
            advance();
            e = std::make_unique<BinaryExpr>(p, op, std::move(e), parse_concat());
        }
        return e;
    }

    ExprPtr parse_concat() {
        Pos p = cur().pos;
        ExprPtr e = parse_math2();
        while (skip_op("~")) e = std::make_unique<BinaryExpr>(p, "~", std::move(e), parse_math2());
        return e;
    }

    ExprPtr parse_math2() {
        Pos p = cur().pos;
        ExprPtr e = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            std::string op = cur().text;
            advance();
            e = std::make_unique<BinaryExpr>(p, op, std::move(e), parse_pow());
        }
        return e;
    }

    ExprPtr parse_pow() {
        Pos p = cur().pos;
        ExprPtr e = parse_unary(true);
        while (skip_op("**"))
            e = std::make_unique<BinaryExpr>(p, "**", std::move(e), parse_unary(true));
        return e;
    }

    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this);
        Pos p = cur().pos;
        ExprPtr e;
        if (skip_op("-")) {
            e = std::make_unique<UnaryExpr>(p, "-", parse_unary(false));
        } else if (skip_op("+")) {
            e = std::make_unique<UnaryExpr>(p, "+", parse_unary(false));
        } else {
            e = parse_primary();
        }
        e = parse_postfix(std::move(e));
        if (with_filter) e = parse_filter_expr(std::move(e));
        return e;
    }

    ExprPtr parse_primary() {
        const Token& t = cur();
        Pos p = t.pos;
        switch (t.type) {
            case Tok::Name: {
                std::string n = t.text;
                advance();
                if (n == "true" || n == "True")
                    return std::make_unique<LiteralExpr>(p, Value::boolean(true));
                if (n == "false" || n == "False")
                    return std::make_unique<LiteralExpr>(p, Value::boolean(false));
                if (n == "none" || n == "None")
                    return std::make_unique<LiteralExpr>(p, Value::none());
                return std::make_unique<NameExpr>(p, n);
            }
            case Tok::String: {
                std::string s = t.text;
                advance();
                while (cur().type == Tok::String) {  // adjacent literals concatenate
                    s += cur().text;
                    advance();
                }
                return std::make_unique<LiteralExpr>(p, Value::string(std::move(s)));
            }
            case Tok::Int: {
                int64_t v = t.int_value;
                advance();
                return std::make_unique<LiteralExpr>(p, Value::integer(v));
            }
            case Tok::Float: {
                double v = t.float_value;
                advance();
                return std::make_unique<LiteralExpr>(p, Value::real(v));
            }
            case Tok::Op:
                if (t.text == "(") {
                    advance();
                    ExprPtr e = parse_tuple(true, true);
                    expect_op(")");
                    return e;
                }
                if (t.text == "[") {
                    advance();
                    auto list = std::make_unique<ListExpr>(p, false);
                    while (!is_op("]")) {
                        if (!list->items.empty()) expect_op(",");
                        if (is_op("]")) break;
                        list->items.push_back(parse_expression(true));
                    }
                    advance();
                    return list;
                }
                if (t.text == "{") {
                    advance();
                    auto dict = std::make_unique<DictExpr>(p);
                    while (!is_op("}")) {
                        if (!dict->items.empty()) expect_op(",");
                        if (is_op("}")) break;
                        ExprPtr k = parse_expression(true);
                        expect_op(":");
                        dict->items.emplace_back(std::move(k), parse_expression(true));
                    }
                    advance();
                    return dict;
                }
                break;
            default:
                break;
        }
        fail("unexpected " + describe(t));
    }

    ExprPtr parse_postfix(ExprPtr e) {
        while (true) {
            Pos p = cur().pos;
            if (is_op(".")) {
                advance();
                if (cur().type == Tok::Name) {
                    e = std::make_unique<GetAttrExpr>(p, std::move(e), cur().text);
                    advance();
                } else if (cur().type == Tok::Int) {
                    e = std::make_unique<GetItemExpr>(
                        p, std::move(e),
                        std::make_unique<LiteralExpr>(p, Value::integer(cur().int_value)));
                    advance();
                } else {
                    fail("expected a name after '.', got " + describe(cur()));
                }
            } else if (is_op("[")) {
                advance();
                e = std::make_unique<GetItemExpr>(p, std::move(e), parse_subscript());
                expect_op("]");
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_subscript() {
        Pos p = cur().pos;
        ExprPtr first;
        if (!is_op(":")) {
            first = parse_expression(true);
            if (!is_op(":")) return first;
        }
        auto slice = std::make_unique<SliceExpr>(p);
        slice->start = std::move(first);
        advance();  // ':'
        if (!is_op("]") && !is_op(":")) slice->stop = parse_expression(true);
        if (skip_op(":")) {
            if (!is_op("]")) slice->step = parse_expression(true);
        }
        return slice;
    }

    void parse_args(Args& args) {
        expect_op("(");
        bool first = true;
        while (!is_op(")")) {
            if (!first) expect_op(",");
            first = false;
            if (is_op(")")) break;
            if (skip_op("**")) {
                args.star_star = parse_expression(true);
            } else if (skip_op("*")) {
                args.star = parse_expression(true);
            } else if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
                std::string key = cur().text;
                advance();
                advance();
                args.kw.emplace_back(std::move(key), parse_expression(true));
            } else {
                if (!args.kw.empty()) fail("positional argument after keyword argument");
                args.pos.push_back(parse_expression(true));
            }
        }
        advance();
    }

    ExprPtr parse_call(ExprPtr callee) {
        auto call = std::make_unique<CallExpr>(cur().pos, std::move(callee));
        parse_args(call->args);
        return call;
    }

    ExprPtr parse_filter_expr(ExprPtr e) {
        while (true) {
            if (is_op("|")) {
                e = parse_filter_chain(std::move(e), true, true);
            } else if (is_name("is")) {
                e = parse_test(std::move(e));
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    // `| name(args) | name ...`; with single_step only one filter (the caller loops).
    ExprPtr parse_filter_chain(ExprPtr operand, bool leading_pipe = true,
                               bool single_step = false) {
        bool first = true;
        while (true) {
            if (!first || leading_pipe) {
                if (!skip_op("|")) break;
            }
            first = false;
            Pos p = cur().pos;
            std::string name = expect_name();
            while (is_op(".") && peek().type == Tok::Name) {
                advance();
                name += "." + cur().text;
                advance();
            }
            auto f = std::make_unique<FilterExpr>(p, std::move(operand), std::move(name));
            if (is_op("(")) parse_args(f->args);
            operand = std::move(f);
            if (single_step) break;
        }
        return operand;
    }

    ExprPtr parse_test(ExprPtr operand) {
        Pos p = cur().pos;
        advance();  // 'is'
        bool negated = skip_name("not");
        std::string name = expect_name();
        while (is_op(".") && peek().type == Tok::Name) {
            advance();
            name += "." + cur().text;
            advance();
        }
        auto test = std::make_unique<TestExpr>(p, std::move(operand), std::move(name));
        const Token& t = cur();
        if (is_op("(")) {
            parse_args(test->args);
        } else if ((t.type == Tok::Name || t.type == Tok::String || t.type == Tok::Int ||
                    t.type == Tok::Float || is_op("[") || is_op("{")) &&
                   !(t.type == Tok::Name &&
                     (t.text == "else" || t.text == "or" || t.text == "and"))) {
            if (is_name("is")) fail("you cannot chain multiple tests with is");
            test->args.pos.push_back(parse_postfix(parse_primary()));
        }
        if (negated) return std::make_unique<UnaryExpr>(p, "not", std::move(test));
        return test;
    }

    const std::vector<Token>& toks_;
    size_t i_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) {
    return Parser(tokens).parse_template();
}

}  // namespace tandem::jinja
