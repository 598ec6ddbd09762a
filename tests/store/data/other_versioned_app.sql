-- A SQLite database of another application that also uses PRAGMA user_version (with the value
-- a Tandem store would have) but not Tandem's application_id.
-- Made with: sqlite3 other_versioned_app.db < other_versioned_app.sql
PRAGMA user_version = 2;
CREATE TABLE conversations (id INTEGER PRIMARY KEY, subject TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT);
INSERT INTO messages VALUES (1, 'not ours');
