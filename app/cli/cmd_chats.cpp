// tandem-cli chats list|show|search|export|import: the conversation store from the shell.
// Reading commands open the database read-only; only import writes.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "command.h"
#include "tandem/common/error.h"
#include "tandem/store/chat_export.h"
#include "tandem/store/chat_store.h"

namespace {

using namespace tandem::store;

struct ChatsOptions {
    std::string db;
    bool json = false;
    // list
    bool archived = false;
    // show
    int64_t id = 0;
    bool all_branches = false;
    // search
    std::vector<std::string> words;
    int limit = 20;
    // export
    std::vector<int64_t> ids;
    std::string format = "json";
    std::string output;
    // import
    std::string input;
};

std::filesystem::path db_path(const ChatsOptions& o) {
    return o.db.empty() ? ChatStore::default_path() : std::filesystem::path(o.db);
}

std::unique_ptr<ChatStore> open_store(const ChatsOptions& o, bool write) {
    ChatStore::Options opts;
    opts.read_only = !write;
    return ChatStore::open(db_path(o), opts);
}

std::string local_time(int64_t ms) {
    std::time_t t = std::time_t(ms / 1000);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
    return buf;
}

// One line of text for a table cell: newlines become spaces, long text is cut (never inside a
// UTF-8 character).
std::string one_line(std::string s, size_t max) {
    for (char& c : s)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (s.size() <= max) return s;
    size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    return s.substr(0, cut) + "…";
}

nlohmann::json message_json(const Message& m) {
    return {{"id", m.id},
            {"parent_id", m.parent_id ? nlohmann::json(*m.parent_id) : nlohmann::json(nullptr)},
            {"role", role_name(m.role)},
            {"content", m.content},
            {"status", status_name(m.status)},
            {"created_at_ms", m.created_at_ms},
            {"model", m.model},
            {"completion_tokens",
             m.completion_tokens ? nlohmann::json(*m.completion_tokens) : nlohmann::json(nullptr)},
            {"finish_reason", m.finish_reason},
            {"branch", m.sibling_index + 1},
            {"branches", m.sibling_count}};
}

int run_list(const ChatsOptions& o) {
    auto store = open_store(o, false);
    auto list = store->list_conversations(o.archived);
    if (o.json) {
        auto j = nlohmann::json::array();
        for (auto& c : list)
            j.push_back({{"id", c.id},
                         {"title", c.title},
                         {"updated_at_ms", c.updated_at_ms},
                         {"model", c.model},
                         {"pinned", c.pinned},
                         {"archived", c.archived},
                         {"messages", c.message_count}});
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    if (list.empty()) std::printf("no conversations in %s\n", store->path().c_str());
    for (auto& c : list) {
        std::string flags = c.pinned ? "pinned" : c.archived ? "archived" : "";
        std::printf("%6lld  %s  %-8s %5lld msg  %s\n", (long long)c.id,
                    local_time(c.updated_at_ms).c_str(), flags.c_str(), (long long)c.message_count,
                    one_line(c.title, 80).c_str());
    }
    return 0;
}

void print_message(const Message& m, int depth) {
    std::string indent(size_t(depth) * 2, ' ');
    std::string head = indent + "--- " + role_name(m.role) + " #" + std::to_string(m.id);
    if (m.sibling_count > 1)
        head += " (branch " + std::to_string(m.sibling_index + 1) + " of " +
                std::to_string(m.sibling_count) + ")";
    if (!m.model.empty()) head += " · " + m.model;
    if (m.completion_tokens) head += " · " + std::to_string(*m.completion_tokens) + " tokens";
    if (m.tokens_per_second) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " · %.1f tokens/s", *m.tokens_per_second);
        head += buf;
    }
    if (m.status != MessageStatus::Complete) head += std::string(" · ") + status_name(m.status);
    std::printf("%s\n", head.c_str());
    std::istringstream lines(m.content);
    std::string line;
    while (std::getline(lines, line)) std::printf("%s%s\n", indent.c_str(), line.c_str());
}

int run_show(const ChatsOptions& o) {
    auto store = open_store(o, false);
    Conversation c = store->conversation(o.id);
    auto messages = o.all_branches ? store->all_messages(o.id) : store->active_path(o.id);
    if (o.json) {
        auto j = nlohmann::json::array();
        for (auto& m : messages) j.push_back(message_json(m));
        std::printf(
            "%s\n",
            nlohmann::json{{"id", c.id}, {"title", c.title}, {"messages", j}}.dump(2).c_str());
        return 0;
    }
    std::printf("# %s\n(conversation %lld%s%s, updated %s)\n", c.title.c_str(), (long long)c.id,
                c.model.empty() ? "" : ", ", c.model.c_str(), local_time(c.updated_at_ms).c_str());
    if (!c.system_prompt.empty()) std::printf("--- system prompt\n%s\n", c.system_prompt.c_str());
    if (!o.all_branches) {
        for (auto& m : messages) print_message(m, 0);
        return 0;
    }
    // Every branch as an indented tree, depth from the parent chain (parents come first).
    std::map<int64_t, int> depth;
    for (auto& m : messages) {
        int d = m.parent_id ? depth[*m.parent_id] + 1 : 0;
        depth[m.id] = d;
        print_message(m, d);
    }
    return 0;
}

int run_search(const ChatsOptions& o) {
    std::string query;
    for (auto& w : o.words) query += (query.empty() ? "" : " ") + w;
    auto store = open_store(o, false);
    auto hits = store->search(query, o.limit);
    if (o.json) {
        auto j = nlohmann::json::array();
        for (auto& h : hits)
            j.push_back({{"conversation_id", h.conversation_id},
                         {"conversation_title", h.conversation_title},
                         {"message_id", h.message_id},
                         {"role", role_name(h.role)},
                         {"snippet", h.snippet},
                         {"score", h.score}});
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    if (hits.empty()) std::printf("no matches for '%s'\n", query.c_str());
    for (auto& h : hits)
        std::printf("%lld/%lld  %s  [%s]  %s\n", (long long)h.conversation_id,
                    (long long)h.message_id, one_line(h.conversation_title, 40).c_str(),
                    role_name(h.role), one_line(h.snippet, 200).c_str());
    return 0;
}

int run_export(const ChatsOptions& o) {
    auto store = open_store(o, false);
    std::string text;
    if (o.format == "json") {
        auto doc = o.ids.empty() ? export_all_json(*store) : export_json(*store, o.ids);
        text = doc.dump(2) + "\n";
    } else {
        std::vector<int64_t> ids = o.ids;
        if (ids.empty())
            for (auto& c : store->list_conversations(true)) ids.push_back(c.id);
        for (size_t i = 0; i < ids.size(); ++i)
            text += (i ? "\n---\n\n" : "") + export_markdown(*store, ids[i]);
    }
    if (o.output.empty() || o.output == "-") {
        std::fwrite(text.data(), 1, text.size(), stdout);
        return 0;
    }
    std::ofstream f(o.output, std::ios::binary);
    f << text;
    f.close();
    if (!f) throw tandem::Error("chats export: cannot write " + o.output);
    std::fprintf(stderr, "wrote %s\n", o.output.c_str());
    return 0;
}

int run_import(const ChatsOptions& o) {
    std::ifstream f(o.input, std::ios::binary);
    if (!f) throw tandem::Error("chats import: cannot read " + o.input);
    nlohmann::json doc = nlohmann::json::parse(f, nullptr, false);
    if (doc.is_discarded()) throw tandem::Error("chats import: " + o.input + ": not valid JSON");
    auto store = open_store(o, true);
    std::vector<int64_t> ids;
    try {
        ids = import_json(*store, doc);
    } catch (const tandem::Error& e) {
        throw tandem::Error(o.input + ": " + e.what());
    }
    std::printf("imported %zu conversation(s) into %s:", ids.size(), store->path().c_str());
    for (auto id : ids) std::printf(" %lld", (long long)id);
    std::printf("\n");
    return 0;
}

tandem::cli::Register reg(
    "chats", "List, show, search, export and import saved conversations", [](CLI::App& sub) {
        auto o = std::make_shared<ChatsOptions>();
        sub.add_option("--db", o->db,
                       "Chat database (default: $TANDEM_CHATS_DB, $TANDEM_HOME/chats.db or "
                       "~/.local/share/tandem/chats.db)");
        sub.require_subcommand(1);

        auto* list = sub.add_subcommand("list", "Conversations, pinned first, then most recent");
        list->add_flag("--archived", o->archived, "Include archived conversations");
        list->add_flag("--json", o->json, "Machine-readable output");

        auto* show = sub.add_subcommand("show", "The messages of one conversation");
        show->add_option("id", o->id, "Conversation id")->required();
        show->add_flag("--all", o->all_branches,
                       "Every branch as a tree, not only the active path");
        show->add_flag("--json", o->json, "Machine-readable output");

        auto* search = sub.add_subcommand("search", "Full-text search over all messages");
        search->add_option("words", o->words, "Words that must all occur (word* for a prefix)")
            ->required();
        search->add_option("-n,--limit", o->limit, "Most hits to show")->capture_default_str();
        search->add_flag("--json", o->json, "Machine-readable output");

        auto* exp = sub.add_subcommand("export", "Export conversations (all when no id is given)");
        exp->add_option("ids", o->ids, "Conversation ids");
        exp->add_option("-f,--format", o->format, "json (every branch, re-importable) or md")
            ->check(CLI::IsMember({"json", "md"}))
            ->capture_default_str();
        exp->add_option("-o,--output", o->output, "Output file (default: standard output)");

        auto* imp = sub.add_subcommand("import", "Add the conversations of a JSON export");
        imp->add_option("file", o->input, "A file written by 'chats export'")->required();

        return [o, list, show, search, exp, imp]() -> int {
            if (list->parsed()) return run_list(*o);
            if (show->parsed()) return run_show(*o);
            if (search->parsed()) return run_search(*o);
            if (exp->parsed()) return run_export(*o);
            if (imp->parsed()) return run_import(*o);
            return 1;
        };
    });

}  // namespace
