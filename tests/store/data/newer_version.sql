-- A Tandem chat store written by a future version (schema 99) that this build must refuse
-- without touching. Made with: sqlite3 newer_version.db < newer_version.sql
PRAGMA application_id = 1413566020;
PRAGMA user_version = 99;
CREATE TABLE conversations (id INTEGER PRIMARY KEY, title TEXT NOT NULL, future_column TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY, content TEXT NOT NULL);
CREATE TABLE future_things (id INTEGER PRIMARY KEY);
INSERT INTO conversations VALUES (1, 'from the future', 'x');
