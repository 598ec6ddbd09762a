// The message tree: appending, branching (edits, regenerations), selecting, reading paths.
#include <algorithm>

#include "store/store_impl.h"
#include "tandem/common/error.h"

namespace tandem::store {

const char* const kMessageColumns =
    "m.id, m.conversation_id, m.parent_id, m.role, m.content, m.status, m.created_at, "
    "m.updated_at, m.finished_at, m.model, m.prompt_tokens, m.completion_tokens, "
    "m.tokens_per_second, m.finish_reason, "
    "(SELECT count(*) FROM messages s WHERE s.conversation_id = m.conversation_id "
    "   AND s.parent_id IS m.parent_id AND s.id < m.id), "
    "(SELECT count(*) FROM messages s WHERE s.conversation_id = m.conversation_id "
    "   AND s.parent_id IS m.parent_id)";

Message read_message(const sql::Statement& st) {
    Message m;
    m.id = st.int64(0);
    m.conversation_id = st.int64(1);
    m.parent_id = st.opt_int64(2);
    m.role = parse_role(st.text(3));
    m.content = st.text(4);
    m.status = parse_status(st.text(5));
    m.created_at_ms = st.int64(6);
    m.updated_at_ms = st.int64(7);
    m.finished_at_ms = st.opt_int64(8);
    m.model = st.text(9);
    m.prompt_tokens = st.opt_int64(10);
    m.completion_tokens = st.opt_int64(11);
    m.tokens_per_second = st.opt_real(12);
    m.finish_reason = st.text(13);
    m.sibling_index = int(st.int64(14));
    m.sibling_count = int(st.int64(15));
    return m;
}

namespace {

// Selected root, then selected children; depth-capped so a damaged tree cannot loop forever.
const char* const kActivePathCte =
    "WITH RECURSIVE path(id, depth) AS ("
    "  SELECT selected_root_id, 0 FROM conversations WHERE id = ?1 AND selected_root_id IS NOT NULL"
    "  UNION ALL"
    "  SELECT m.selected_child_id, p.depth + 1 FROM path p JOIN messages m ON m.id = p.id"
    "  WHERE m.selected_child_id IS NOT NULL AND p.depth < 1000000) ";

std::vector<Message> read_all(sql::Statement& st) {
    std::vector<Message> out;
    while (st.step()) out.push_back(read_message(st));
    return out;
}

Message message_in(sql::Db& db, int64_t id) {
    sql::Statement st(db,
                      std::string("SELECT ") + kMessageColumns + " FROM messages m WHERE m.id = ?");
    st.bind(1, id);
    if (!st.step())
        throw Error("store: " + db.path() + ": no message with id " + std::to_string(id));
    return read_message(st);
}

// Inserts one message row; returns its id. The caller selects it and touches the conversation.
int64_t insert_message(sql::Db& db, int64_t conversation_id, std::optional<int64_t> parent,
                       Role role, const std::string& content, MessageStatus status,
                       const std::string& model, int64_t now) {
    sql::Statement st(
        db,
        "INSERT INTO messages (conversation_id, parent_id, role, content, status, "
        "created_at, updated_at, finished_at, model) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    st.bind(1, conversation_id).bind(2, parent).bind(3, role_name(role)).bind(4, content);
    st.bind(5, status_name(status)).bind(6, now).bind(7, now);
    if (status == MessageStatus::Streaming)
        st.bind_null(8);
    else
        st.bind(8, now);
    st.bind(9, model).run();
    return db.last_insert_rowid();
}

void require_parent_in(sql::Db& db, int64_t conversation_id, int64_t parent) {
    sql::Statement st(db, "SELECT conversation_id FROM messages WHERE id = ?");
    st.bind(1, parent);
    if (!st.step() || st.int64(0) != conversation_id)
        throw Error("store: " + db.path() + ": message " + std::to_string(parent) +
                    " is not in conversation " + std::to_string(conversation_id));
}

}  // namespace

std::optional<int64_t> active_leaf(sql::Db& db, int64_t conversation_id) {
    sql::Statement st(
        db, std::string(kActivePathCte) + "SELECT id FROM path ORDER BY depth DESC LIMIT 1");
    st.bind(1, conversation_id);
    if (!st.step()) return std::nullopt;
    return st.int64(0);
}

void select_child(sql::Db& db, int64_t conversation_id, std::optional<int64_t> parent, int64_t id) {
    if (parent) {
        sql::Statement st(db, "UPDATE messages SET selected_child_id = ? WHERE id = ?");
        st.bind(1, id).bind(2, *parent).run();
    } else {
        sql::Statement st(db, "UPDATE conversations SET selected_root_id = ? WHERE id = ?");
        st.bind(1, id).bind(2, conversation_id).run();
    }
}

namespace {

// Makes `id` and every ancestor the selected child of its parent, so the active path runs
// through `id` even when it sits in a branch that was not selected (a search hit, a
// regeneration of an older reply).
void select_with_ancestors(sql::Db& db, int64_t conversation_id, int64_t id) {
    std::optional<int64_t> current = id;
    sql::Statement parent_of(db, "SELECT parent_id FROM messages WHERE id = ?");
    for (int guard = 0; current && guard < 1000000; ++guard) {
        parent_of.reset();
        parent_of.bind(1, *current);
        if (!parent_of.step()) break;
        auto parent = parent_of.opt_int64(0);
        parent_of.reset();
        select_child(db, conversation_id, parent, *current);
        current = parent;
    }
}

}  // namespace

int64_t ChatStore::append_message(int64_t conversation_id, Role role, const std::string& content) {
    std::lock_guard lock(impl_->write_mu);
    sql::Db& db = impl_->write_db();
    sql::Transaction tx(db);
    require_conversation(db, conversation_id);
    auto parent = active_leaf(db, conversation_id);
    int64_t now = now_ms();
    int64_t id = insert_message(db, conversation_id, parent, role, content, MessageStatus::Complete,
                                "", now);
    select_child(db, conversation_id, parent, id);
    touch_conversation(db, conversation_id, now);
    tx.commit();
    return id;
}

AssistantStream ChatStore::begin_assistant_message(int64_t conversation_id,
                                                   const std::string& model,
                                                   std::optional<int64_t> parent_id) {
    std::lock_guard lock(impl_->write_mu);
    sql::Db& db = impl_->write_db();
    sql::Transaction tx(db);
    require_conversation(db, conversation_id);
    if (parent_id)
        require_parent_in(db, conversation_id, *parent_id);
    else
        parent_id = active_leaf(db, conversation_id);
    int64_t now = now_ms();
    int64_t id = insert_message(db, conversation_id, parent_id, Role::Assistant, "",
                                MessageStatus::Streaming, model, now);
    select_with_ancestors(db, conversation_id, id);
    touch_conversation(db, conversation_id, now);
    tx.commit();
    return AssistantStream(this, id);
}

int64_t ChatStore::edit_message(int64_t message_id, const std::string& content) {
    std::lock_guard lock(impl_->write_mu);
    sql::Db& db = impl_->write_db();
    sql::Transaction tx(db);
    Message old = message_in(db, message_id);
    int64_t now = now_ms();
    int64_t id = insert_message(db, old.conversation_id, old.parent_id, old.role, content,
                                MessageStatus::Complete, old.model, now);
    select_with_ancestors(db, old.conversation_id, id);
    touch_conversation(db, old.conversation_id, now);
    tx.commit();
    return id;
}

void ChatStore::select_branch(int64_t message_id) {
    std::lock_guard lock(impl_->write_mu);
    sql::Db& db = impl_->write_db();
    sql::Transaction tx(db);
    Message m = message_in(db, message_id);
    select_with_ancestors(db, m.conversation_id, message_id);
    tx.commit();
}

Message ChatStore::message(int64_t id) {
    std::lock_guard lock(impl_->read_mu);
    return message_in(*impl_->reader, id);
}

std::vector<Message> ChatStore::active_path(int64_t conversation_id) {
    std::lock_guard lock(impl_->read_mu);
    sql::Db& db = *impl_->reader;
    sql::Statement st(db, std::string(kActivePathCte) + "SELECT " + kMessageColumns +
                              " FROM path JOIN messages m ON m.id = path.id ORDER BY path.depth");
    st.bind(1, conversation_id);
    auto out = read_all(st);
    if (out.empty()) require_conversation(db, conversation_id);
    return out;
}

std::vector<Message> ChatStore::siblings(int64_t message_id) {
    std::lock_guard lock(impl_->read_mu);
    sql::Db& db = *impl_->reader;
    Message m = message_in(db, message_id);
    sql::Statement st(db, std::string("SELECT ") + kMessageColumns +
                              " FROM messages m WHERE m.conversation_id = ? AND m.parent_id IS ?"
                              " ORDER BY m.id");
    st.bind(1, m.conversation_id).bind(2, m.parent_id);
    return read_all(st);
}

std::vector<Message> ChatStore::all_messages(int64_t conversation_id) {
    std::lock_guard lock(impl_->read_mu);
    sql::Db& db = *impl_->reader;
    sql::Statement st(db, std::string("SELECT ") + kMessageColumns +
                              " FROM messages m WHERE m.conversation_id = ? ORDER BY m.id");
    st.bind(1, conversation_id);
    auto out = read_all(st);
    if (out.empty()) require_conversation(db, conversation_id);
    return out;
}

int ChatStore::recover_interrupted() {
    std::lock_guard lock(impl_->write_mu);
    sql::Db& db = impl_->write_db();
    sql::Statement st(db,
                      "UPDATE messages SET status = 'interrupted', finish_reason = 'interrupted', "
                      "finished_at = updated_at WHERE status = 'streaming'");
    st.run();
    return db.changes();
}

}  // namespace tandem::store
