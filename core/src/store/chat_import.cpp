// Import of the "tandem-chats" JSON: validate the whole document first, then insert it in one
// transaction with fresh ids, so a bad file adds nothing.
#include <map>
#include <set>

#include "store/store_impl.h"
#include "tandem/common/error.h"
#include "tandem/store/chat_export.h"

namespace tandem::store {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& what) {
    throw Error("import: " + where + ": " + what);
}

const json& field(const json& obj, const std::string& where, const char* name) {
    auto it = obj.find(name);
    if (it == obj.end()) bad(where + "." + name, "missing");
    return *it;
}

std::string text_field(const json& obj, const std::string& where, const char* name,
                       std::optional<std::string> fallback = std::nullopt) {
    if (!obj.contains(name) && fallback) return *fallback;
    const json& v = field(obj, where, name);
    if (!v.is_string())
        bad(where + "." + name, std::string("expected a string, got ") + v.type_name());
    return v.get<std::string>();
}

int64_t int_field(const json& obj, const std::string& where, const char* name) {
    const json& v = field(obj, where, name);
    if (!v.is_number_integer())
        bad(where + "." + name, std::string("expected an integer, got ") + v.type_name());
    return v.get<int64_t>();
}

std::optional<int64_t> opt_int_field(const json& obj, const std::string& where, const char* name) {
    auto it = obj.find(name);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer())
        bad(where + "." + name, std::string("expected an integer or null, got ") + it->type_name());
    return it->get<int64_t>();
}

std::optional<double> opt_real_field(const json& obj, const std::string& where, const char* name) {
    auto it = obj.find(name);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_number())
        bad(where + "." + name, std::string("expected a number or null, got ") + it->type_name());
    return it->get<double>();
}

bool bool_field(const json& obj, const std::string& where, const char* name) {
    auto it = obj.find(name);
    if (it == obj.end()) return false;
    if (!it->is_boolean())
        bad(where + "." + name, std::string("expected true or false, got ") + it->type_name());
    return it->get<bool>();
}

struct MessagePlan {
    int64_t old_id;
    std::optional<int64_t> parent;  // old ids
    std::optional<int64_t> selected_child;
    std::string role, content, status, model, finish_reason;
    int64_t created_at, updated_at;
    std::optional<int64_t> finished_at, prompt_tokens, completion_tokens;
    std::optional<double> tokens_per_second;
};

struct ConversationPlan {
    std::string title, model, system_prompt, sampling;
    int64_t created_at, updated_at;
    bool pinned, archived;
    std::optional<int64_t> selected_root;  // old id
    std::vector<MessagePlan> messages;
};

ConversationPlan plan_conversation(const json& c, const std::string& where) {
    if (!c.is_object()) bad(where, std::string("expected an object, got ") + c.type_name());
    ConversationPlan p;
    p.title = text_field(c, where, "title");
    p.model = text_field(c, where, "model", "");
    p.system_prompt = text_field(c, where, "system_prompt", "");
    json sampling = c.value("sampling", json::object());
    if (!sampling.is_object()) bad(where + ".sampling", "expected an object");
    p.sampling = sampling.dump();
    p.created_at = int_field(c, where, "created_at_ms");
    p.updated_at =
        c.contains("updated_at_ms") ? int_field(c, where, "updated_at_ms") : p.created_at;
    p.pinned = bool_field(c, where, "pinned");
    p.archived = bool_field(c, where, "archived");
    p.selected_root = opt_int_field(c, where, "selected_root_id");

    const json& msgs = field(c, where, "messages");
    if (!msgs.is_array()) bad(where + ".messages", "expected an array");
    std::map<int64_t, std::optional<int64_t>> parent_of;  // old id -> old parent
    for (size_t i = 0; i < msgs.size(); ++i) {
        const json& m = msgs[i];
        std::string w = where + ".messages[" + std::to_string(i) + "]";
        if (!m.is_object()) bad(w, std::string("expected an object, got ") + m.type_name());
        MessagePlan mp;
        mp.old_id = int_field(m, w, "id");
        if (parent_of.count(mp.old_id)) bad(w + ".id", "duplicate id " + std::to_string(mp.old_id));
        mp.parent = opt_int_field(m, w, "parent_id");
        if (mp.parent && !parent_of.count(*mp.parent))
            bad(w + ".parent_id",
                std::to_string(*mp.parent) + " is not an earlier message of this conversation");
        mp.selected_child = opt_int_field(m, w, "selected_child_id");
        mp.role = text_field(m, w, "role");
        try {
            parse_role(mp.role);
        } catch (const Error& e) {
            bad(w + ".role", e.what());
        }
        mp.content = text_field(m, w, "content");
        mp.status = text_field(m, w, "status", "complete");
        try {
            parse_status(mp.status);
        } catch (const Error& e) {
            bad(w + ".status", e.what());
        }
        mp.created_at = int_field(m, w, "created_at_ms");
        mp.updated_at =
            m.contains("updated_at_ms") ? int_field(m, w, "updated_at_ms") : mp.created_at;
        mp.finished_at = opt_int_field(m, w, "finished_at_ms");
        mp.model = text_field(m, w, "model", "");
        mp.prompt_tokens = opt_int_field(m, w, "prompt_tokens");
        mp.completion_tokens = opt_int_field(m, w, "completion_tokens");
        mp.tokens_per_second = opt_real_field(m, w, "tokens_per_second");
        mp.finish_reason = text_field(m, w, "finish_reason", "");
        parent_of[mp.old_id] = mp.parent;
        p.messages.push_back(std::move(mp));
    }
    // Selections must point down the tree, or the active path would be nonsense.
    for (size_t i = 0; i < p.messages.size(); ++i) {
        auto& mp = p.messages[i];
        if (mp.selected_child &&
            (!parent_of.count(*mp.selected_child) || parent_of[*mp.selected_child] != mp.old_id))
            bad(where + ".messages[" + std::to_string(i) + "].selected_child_id",
                std::to_string(*mp.selected_child) + " is not a child of message " +
                    std::to_string(mp.old_id));
    }
    if (p.selected_root &&
        (!parent_of.count(*p.selected_root) || parent_of[*p.selected_root].has_value()))
        bad(where + ".selected_root_id",
            std::to_string(*p.selected_root) + " is not a first message of this conversation");
    return p;
}

int64_t insert_conversation(sql::Db& db, const ConversationPlan& p) {
    sql::Statement c(
        db,
        "INSERT INTO conversations (title, created_at, updated_at, model, system_prompt, "
        "sampling, pinned, archived) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    c.bind(1, p.title).bind(2, p.created_at).bind(3, p.updated_at).bind(4, p.model);
    c.bind(5, p.system_prompt).bind(6, p.sampling).bind(7, int64_t(p.pinned));
    c.bind(8, int64_t(p.archived)).run();
    int64_t conv_id = db.last_insert_rowid();

    std::map<int64_t, int64_t> new_id;  // old -> new
    sql::Statement m(
        db,
        "INSERT INTO messages (conversation_id, parent_id, role, content, status, "
        "created_at, updated_at, finished_at, model, prompt_tokens, completion_tokens, "
        "tokens_per_second, finish_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    for (const auto& mp : p.messages) {
        m.reset();
        std::optional<int64_t> parent;
        if (mp.parent) parent = new_id.at(*mp.parent);
        m.bind(1, conv_id).bind(2, parent).bind(3, mp.role).bind(4, mp.content).bind(5, mp.status);
        m.bind(6, mp.created_at).bind(7, mp.updated_at).bind(8, mp.finished_at).bind(9, mp.model);
        m.bind(10, mp.prompt_tokens).bind(11, mp.completion_tokens).bind(12, mp.tokens_per_second);
        m.bind(13, mp.finish_reason).run();
        new_id[mp.old_id] = db.last_insert_rowid();
    }
    sql::Statement sel(db, "UPDATE messages SET selected_child_id = ? WHERE id = ?");
    for (const auto& mp : p.messages) {
        if (!mp.selected_child) continue;
        sel.reset();
        sel.bind(1, new_id.at(*mp.selected_child)).bind(2, new_id.at(mp.old_id)).run();
    }
    if (p.selected_root) {
        sql::Statement root(db, "UPDATE conversations SET selected_root_id = ? WHERE id = ?");
        root.bind(1, new_id.at(*p.selected_root)).bind(2, conv_id).run();
    }
    return conv_id;
}

}  // namespace

std::vector<int64_t> import_json(ChatStore& store, const json& doc) {
    if (!doc.is_object())
        bad("document", std::string("expected an object, got ") + doc.type_name());
    std::string format = text_field(doc, "document", "format");
    if (format != kExportFormat)
        bad("format",
            "'" + format + "' is not a Tandem chat export (expected '" + kExportFormat + "')");
    int64_t version = int_field(doc, "document", "version");
    if (version < 1 || version > kExportVersion)
        bad("version", std::to_string(version) + " is not supported (this build reads 1 to " +
                           std::to_string(kExportVersion) + ")");
    const json& convs = field(doc, "document", "conversations");
    if (!convs.is_array()) bad("conversations", "expected an array");
    std::vector<ConversationPlan> plans;
    for (size_t i = 0; i < convs.size(); ++i)
        plans.push_back(plan_conversation(convs[i], "conversations[" + std::to_string(i) + "]"));

    auto& impl = store.impl();
    std::lock_guard lock(impl.write_mu);
    sql::Db& db = impl.write_db();
    sql::Transaction tx(db);
    std::vector<int64_t> ids;
    for (const auto& p : plans) ids.push_back(insert_conversation(db, p));
    tx.commit();
    return ids;
}

}  // namespace tandem::store
