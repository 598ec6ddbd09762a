#include "store/schema.h"

#include <string>

#include "tandem/store/chat_store.h"

namespace tandem::store {
namespace {

// Version 1: conversations and the message tree. (Frozen: databases of this version exist.)
// selected_root_id / selected_child_id hold the active path: switching a branch is one UPDATE.
const char* const kToV1 = R"sql(
CREATE TABLE conversations (
    id               INTEGER PRIMARY KEY,
    title            TEXT    NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    model            TEXT    NOT NULL DEFAULT '',
    system_prompt    TEXT    NOT NULL DEFAULT '',
    sampling         TEXT    NOT NULL DEFAULT '{}',
    pinned           INTEGER NOT NULL DEFAULT 0,
    archived         INTEGER NOT NULL DEFAULT 0,
    selected_root_id INTEGER REFERENCES messages(id) ON DELETE SET NULL
);
CREATE TABLE messages (
    id                INTEGER PRIMARY KEY,
    conversation_id   INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    parent_id         INTEGER REFERENCES messages(id) ON DELETE CASCADE,
    selected_child_id INTEGER REFERENCES messages(id) ON DELETE SET NULL,
    role              TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content           TEXT    NOT NULL,
    created_at        INTEGER NOT NULL,
    status            TEXT    NOT NULL DEFAULT 'complete'
                      CHECK (status IN ('complete', 'streaming', 'interrupted'))
);
CREATE INDEX messages_by_parent ON messages(conversation_id, parent_id);
CREATE INDEX messages_by_selected_child ON messages(selected_child_id);
CREATE INDEX conversations_by_selected_root ON conversations(selected_root_id);
)sql";

// Version 2: per-message generation metadata and full-text search.
const char* const kToV2 = R"sql(
ALTER TABLE messages ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN finished_at INTEGER;
ALTER TABLE messages ADD COLUMN model TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN prompt_tokens INTEGER;
ALTER TABLE messages ADD COLUMN completion_tokens INTEGER;
ALTER TABLE messages ADD COLUMN tokens_per_second REAL;
ALTER TABLE messages ADD COLUMN finish_reason TEXT NOT NULL DEFAULT '';
UPDATE messages SET updated_at = created_at;
UPDATE messages SET finished_at = created_at WHERE status <> 'streaming';
UPDATE messages SET finish_reason = 'interrupted' WHERE status = 'interrupted';
-- Version 1 knew only the conversation's model; it is the best guess for its replies.
UPDATE messages SET model = (SELECT c.model FROM conversations c WHERE c.id = messages.conversation_id)
    WHERE role = 'assistant';

CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, content = 'messages', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2');
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
)sql";

const char* const kMigrations[] = {kToV1, kToV2};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

}  // namespace

void migrate(sql::Db& db, int from_version) {
    if (from_version == 0) db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
    for (int v = from_version; v < kSchemaVersion; ++v) {
        db.exec(kMigrations[v]);
        db.exec("PRAGMA user_version = " + std::to_string(v + 1));
    }
}

}  // namespace tandem::store
