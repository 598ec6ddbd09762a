#pragma once
// ChatStore's insides: a writer connection and a reader connection, each behind its own mutex.
// In WAL mode readers see the last committed state without waiting for the writer.
#include <memory>
#include <mutex>

#include "store/sqlite_db.h"
#include "tandem/store/chat_store.h"

namespace tandem::store {

struct ChatStore::Impl {
    Options options;
    std::mutex write_mu;
    std::unique_ptr<sql::Db> writer;  // null when opened read-only
    std::mutex read_mu;
    std::unique_ptr<sql::Db> reader;

    // The writer, or an error naming the file when the store was opened read-only.
    sql::Db& write_db();
};

int64_t now_ms();

// The columns read_message() expects, for "SELECT <kMessageColumns> FROM messages m ...".
extern const char* const kMessageColumns;
Message read_message(const sql::Statement& st);

// The last message of the active path, nullopt for an empty conversation.
std::optional<int64_t> active_leaf(sql::Db& db, int64_t conversation_id);
// Throws tandem::Error when the conversation does not exist.
void require_conversation(sql::Db& db, int64_t conversation_id);
// Makes message `id` (child of `parent`, or a root when nullopt) the selected one.
void select_child(sql::Db& db, int64_t conversation_id, std::optional<int64_t> parent, int64_t id);
void touch_conversation(sql::Db& db, int64_t conversation_id, int64_t at_ms);

}  // namespace tandem::store
