// Conversation records: create, change, delete, list.
#include "store/store_impl.h"
#include "tandem/common/error.h"

namespace tandem::store {
namespace {

const char* const kConversationColumns =
    "c.id, c.title, c.created_at, c.updated_at, c.model, c.system_prompt, c.sampling, c.pinned, "
    "c.archived, (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id)";

Conversation read_conversation(const sql::Statement& st, const std::string& path) {
    Conversation c;
    c.id = st.int64(0);
    c.title = st.text(1);
    c.created_at_ms = st.int64(2);
    c.updated_at_ms = st.int64(3);
    c.model = st.text(4);
    c.system_prompt = st.text(5);
    c.sampling = nlohmann::json::parse(st.text(6), nullptr, false);
    if (c.sampling.is_discarded() || !c.sampling.is_object())
        throw Error("store: " + path + ": conversation " + std::to_string(c.id) +
                    ": column 'sampling' is not a JSON object");
    c.pinned = st.int64(7) != 0;
    c.archived = st.int64(8) != 0;
    c.message_count = st.int64(9);
    return c;
}

std::string sampling_text(const nlohmann::json& sampling) {
    if (!sampling.is_object())
        throw Error("store: sampling settings must be a JSON object, got " +
                    std::string(sampling.type_name()));
    return sampling.dump();
}

}  // namespace

void require_conversation(sql::Db& db, int64_t conversation_id) {
    sql::Statement st(db, "SELECT 1 FROM conversations WHERE id = ?");
    st.bind(1, conversation_id);
    if (!st.step())
        throw Error("store: " + db.path() + ": no conversation with id " +
                    std::to_string(conversation_id));
}

void touch_conversation(sql::Db& db, int64_t conversation_id, int64_t at_ms) {
    sql::Statement st(db, "UPDATE conversations SET updated_at = max(updated_at, ?) WHERE id = ?");
    st.bind(1, at_ms).bind(2, conversation_id).run();
}

int64_t ChatStore::create_conversation(const NewConversation& c) {
    std::lock_guard lock(impl_->write_mu);
    sql::Db& db = impl_->write_db();
    int64_t now = now_ms();
    sql::Statement st(db,
                      "INSERT INTO conversations (title, created_at, updated_at, model, "
                      "system_prompt, sampling) VALUES (?, ?, ?, ?, ?, ?)");
    st.bind(1, c.title).bind(2, now).bind(3, now).bind(4, c.model).bind(5, c.system_prompt);
    st.bind(6, sampling_text(c.sampling)).run();
    return db.last_insert_rowid();
}

namespace {
// UPDATE conversations SET <column> = value, updated_at = now WHERE id = id; unknown id: Error.
template <class T>
void update_column(ChatStore::Impl& impl, int64_t id, const char* column, const T& value,
                   bool touch = true) {
    std::lock_guard lock(impl.write_mu);
    sql::Db& db = impl.write_db();
    std::string q = std::string("UPDATE conversations SET ") + column + " = ?" +
                    (touch ? ", updated_at = max(updated_at, ?)" : "") + " WHERE id = ?";
    sql::Statement st(db, q);
    st.bind(1, value);
    if (touch) st.bind(2, now_ms());
    st.bind(touch ? 3 : 2, id).run();
    if (db.changes() == 0)
        throw Error("store: " + db.path() + ": no conversation with id " + std::to_string(id));
}
}  // namespace

void ChatStore::rename_conversation(int64_t id, const std::string& title) {
    update_column(*impl_, id, "title", title);
}
// Archiving or pinning files a conversation; it does not make it "recently updated".
void ChatStore::set_archived(int64_t id, bool archived) {
    update_column(*impl_, id, "archived", int64_t(archived), false);
}
void ChatStore::set_pinned(int64_t id, bool pinned) {
    update_column(*impl_, id, "pinned", int64_t(pinned), false);
}
void ChatStore::set_model(int64_t id, const std::string& model) {
    update_column(*impl_, id, "model", model);
}
void ChatStore::set_system_prompt(int64_t id, const std::string& prompt) {
    update_column(*impl_, id, "system_prompt", prompt);
}
void ChatStore::set_sampling(int64_t id, const nlohmann::json& sampling) {
    update_column(*impl_, id, "sampling", sampling_text(sampling));
}

void ChatStore::delete_conversation(int64_t id) {
    std::lock_guard lock(impl_->write_mu);
    sql::Db& db = impl_->write_db();
    sql::Transaction tx(db);
    // The tree points into itself (parent, selected child); cutting the selections first lets
    // the cascade delete the messages without SET NULL actions on rows about to go.
    sql::Statement unselect(db, "UPDATE conversations SET selected_root_id = NULL WHERE id = ?");
    unselect.bind(1, id).run();
    sql::Statement del(db, "DELETE FROM conversations WHERE id = ?");
    del.bind(1, id).run();
    if (db.changes() == 0)
        throw Error("store: " + db.path() + ": no conversation with id " + std::to_string(id));
    tx.commit();
}

Conversation ChatStore::conversation(int64_t id) {
    std::lock_guard lock(impl_->read_mu);
    sql::Db& db = *impl_->reader;
    sql::Statement st(
        db, std::string("SELECT ") + kConversationColumns + " FROM conversations c WHERE c.id = ?");
    st.bind(1, id);
    if (!st.step())
        throw Error("store: " + db.path() + ": no conversation with id " + std::to_string(id));
    return read_conversation(st, db.path());
}

std::vector<Conversation> ChatStore::list_conversations(bool include_archived) {
    std::lock_guard lock(impl_->read_mu);
    sql::Db& db = *impl_->reader;
    sql::Statement st(db, std::string("SELECT ") + kConversationColumns +
                              " FROM conversations c WHERE ? OR c.archived = 0"
                              " ORDER BY c.pinned DESC, c.updated_at DESC, c.id DESC");
    st.bind(1, int64_t(include_archived));
    std::vector<Conversation> out;
    while (st.step()) out.push_back(read_conversation(st, db.path()));
    return out;
}

}  // namespace tandem::store
