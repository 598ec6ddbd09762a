-- A Tandem chat store of schema version 1, written by hand (not by our code) and turned into
-- schema_v1.db with the sqlite3 command-line tool:
--   rm -f schema_v1.db && sqlite3 schema_v1.db < schema_v1.sql
-- It is the input of the v1 -> v2 migration test; keep both files unchanged.
PRAGMA application_id = 1413566020;  -- 0x54414E44, 'TAND'
PRAGMA user_version = 1;
PRAGMA foreign_keys = ON;

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

BEGIN;
-- Conversation 1: a regenerated reply (messages 2 and 3, 3 selected) and a follow-up.
INSERT INTO conversations VALUES
  (1, 'Trip to Lyon', 1767225600000, 1767225900000, 'llama-3.2-3b-instruct-q4_k_m',
   'You are a travel guide.', '{"temperature":0.7,"top_p":0.9}', 1, 0, NULL);
INSERT INTO messages VALUES (1, 1, NULL, NULL, 'user', 'Where should I eat in Lyon?', 1767225600000, 'complete');
INSERT INTO messages VALUES (2, 1, 1, NULL, 'assistant', 'Try a bouchon near the Saône.', 1767225610000, 'complete');
INSERT INTO messages VALUES (3, 1, 1, NULL, 'assistant', 'A bouchon: try the quenelles at a café in Vieux Lyon.', 1767225620000, 'complete');
INSERT INTO messages VALUES (4, 1, 3, NULL, 'user', 'And for dessert?', 1767225700000, 'complete');
INSERT INTO messages VALUES (5, 1, 4, NULL, 'assistant', 'Tarte aux pralines, of course. It is pink and', 1767225710000, 'interrupted');
UPDATE messages SET selected_child_id = 3 WHERE id = 1;
UPDATE messages SET selected_child_id = 4 WHERE id = 3;
UPDATE messages SET selected_child_id = 5 WHERE id = 4;
UPDATE conversations SET selected_root_id = 1 WHERE id = 1;

-- Conversation 2: archived, its first message edited (two roots, the edit 7 selected), and a
-- reply a crashed generation left 'streaming'.
INSERT INTO conversations VALUES
  (2, 'Rust lifetimes', 1767312000000, 1767312100000, 'qwen2.5-coder-7b', '', '{}', 0, 1, NULL);
INSERT INTO messages VALUES (6, 2, NULL, NULL, 'user', 'Explain lifetimes', 1767312000000, 'complete');
INSERT INTO messages VALUES (7, 2, NULL, NULL, 'user', 'Explain Rust lifetimes with an example', 1767312050000, 'complete');
INSERT INTO messages VALUES (8, 2, 7, NULL, 'assistant', 'A lifetime names the region where a borrow is valid: fn longest<''a>', 1767312060000, 'streaming');
UPDATE messages SET selected_child_id = 8 WHERE id = 7;
UPDATE conversations SET selected_root_id = 7 WHERE id = 2;
COMMIT;
