// Export to JSON (everything, all branches) and Markdown (the active path, for reading).
#include "tandem/store/chat_export.h"

#include <cstdio>
#include <ctime>

#include "store/store_impl.h"
#include "tandem/common/error.h"

namespace tandem::store {
namespace {

using nlohmann::json;

json optional_json(const std::optional<int64_t>& v) {
    return v ? json(*v) : json(nullptr);
}
json optional_json(const std::optional<double>& v) {
    return v ? json(*v) : json(nullptr);
}

json export_conversation(sql::Db& db, int64_t id) {
    sql::Statement c(
        db,
        "SELECT title, created_at, updated_at, model, system_prompt, sampling, pinned, "
        "archived, selected_root_id FROM conversations WHERE id = ?");
    c.bind(1, id);
    if (!c.step())
        throw Error("store: " + db.path() + ": no conversation with id " + std::to_string(id));
    json conv = {{"id", id},
                 {"title", c.text(0)},
                 {"created_at_ms", c.int64(1)},
                 {"updated_at_ms", c.int64(2)},
                 {"model", c.text(3)},
                 {"system_prompt", c.text(4)},
                 {"sampling", json::parse(c.text(5), nullptr, false)},
                 {"pinned", c.int64(6) != 0},
                 {"archived", c.int64(7) != 0},
                 {"selected_root_id", optional_json(c.opt_int64(8))}};
    if (conv["sampling"].is_discarded()) conv["sampling"] = json::object();

    sql::Statement m(db,
                     "SELECT id, parent_id, selected_child_id, role, content, status, created_at, "
                     "updated_at, finished_at, model, prompt_tokens, completion_tokens, "
                     "tokens_per_second, finish_reason FROM messages WHERE conversation_id = ? "
                     "ORDER BY id");
    m.bind(1, id);
    json messages = json::array();
    while (m.step()) {
        messages.push_back({{"id", m.int64(0)},
                            {"parent_id", optional_json(m.opt_int64(1))},
                            {"selected_child_id", optional_json(m.opt_int64(2))},
                            {"role", m.text(3)},
                            {"content", m.text(4)},
                            {"status", m.text(5)},
                            {"created_at_ms", m.int64(6)},
                            {"updated_at_ms", m.int64(7)},
                            {"finished_at_ms", optional_json(m.opt_int64(8))},
                            {"model", m.text(9)},
                            {"prompt_tokens", optional_json(m.opt_int64(10))},
                            {"completion_tokens", optional_json(m.opt_int64(11))},
                            {"tokens_per_second", optional_json(m.opt_real(12))},
                            {"finish_reason", m.text(13)}});
    }
    conv["messages"] = std::move(messages);
    return conv;
}

// A read transaction, so an export taken while a generation writes is one consistent snapshot.
class ReadSnapshot {
  public:
    explicit ReadSnapshot(sql::Db& db) : db_(db) { db_.exec("BEGIN"); }
    ~ReadSnapshot() { sqlite3_exec(db_.handle(), "COMMIT", nullptr, nullptr, nullptr); }

  private:
    sql::Db& db_;
};

std::string utc_time(int64_t ms) {
    std::time_t t = std::time_t(ms / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
    return buf;
}

std::string heading(Role r) {
    switch (r) {
        case Role::System:
            return "System";
        case Role::User:
            return "User";
        case Role::Assistant:
            return "Assistant";
        case Role::Tool:
            return "Tool";
    }
    return "User";
}

// "llama-3-8b · 120 tokens · 35.2 tokens/s · stopped: length" for an assistant message.
std::string message_footer(const Message& m) {
    std::string out;
    auto add = [&](const std::string& s) { out += (out.empty() ? "" : " · ") + s; };
    if (!m.model.empty()) add(m.model);
    if (m.completion_tokens) add(std::to_string(*m.completion_tokens) + " tokens");
    if (m.tokens_per_second) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f tokens/s", *m.tokens_per_second);
        add(buf);
    }
    if (m.status == MessageStatus::Interrupted) add("interrupted");
    if (m.status == MessageStatus::Streaming) add("still generating");
    if (m.status == MessageStatus::Complete && !m.finish_reason.empty() &&
        m.finish_reason != "stop")
        add("stopped: " + m.finish_reason);
    return out;
}

}  // namespace

json export_json(ChatStore& store, const std::vector<int64_t>& conversation_ids) {
    auto& impl = store.impl();
    std::lock_guard lock(impl.read_mu);
    ReadSnapshot snapshot(*impl.reader);
    json convs = json::array();
    for (int64_t id : conversation_ids) convs.push_back(export_conversation(*impl.reader, id));
    return {{"format", kExportFormat}, {"version", kExportVersion}, {"conversations", convs}};
}

json export_all_json(ChatStore& store) {
    auto& impl = store.impl();
    std::lock_guard lock(impl.read_mu);
    ReadSnapshot snapshot(*impl.reader);
    sql::Statement ids(*impl.reader, "SELECT id FROM conversations ORDER BY id");
    json convs = json::array();
    while (ids.step()) convs.push_back(export_conversation(*impl.reader, ids.int64(0)));
    return {{"format", kExportFormat}, {"version", kExportVersion}, {"conversations", convs}};
}

std::string export_markdown(ChatStore& store, int64_t conversation_id) {
    Conversation c = store.conversation(conversation_id);
    auto path = store.active_path(conversation_id);
    std::string md =
        "# " + (c.title.empty() ? std::string("Untitled conversation") : c.title) + "\n\n";
    if (!c.model.empty()) md += "- Model: " + c.model + "\n";
    md += "- Created: " + utc_time(c.created_at_ms) + "\n";
    md += "- Updated: " + utc_time(c.updated_at_ms) + "\n";
    if (!c.sampling.empty()) md += "- Sampling: `" + c.sampling.dump() + "`\n";
    if (!c.system_prompt.empty()) md += "\n## System prompt\n\n" + c.system_prompt + "\n";
    for (const Message& m : path) {
        md += "\n## " + heading(m.role);
        if (m.sibling_count > 1)
            md += " (version " + std::to_string(m.sibling_index + 1) + " of " +
                  std::to_string(m.sibling_count) + ")";
        md += "\n\n" + m.content + "\n";
        if (m.role == Role::Assistant) {
            std::string footer = message_footer(m);
            if (!footer.empty()) md += "\n*" + footer + "*\n";
        }
    }
    return md;
}

}  // namespace tandem::store
