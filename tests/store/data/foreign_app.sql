-- A SQLite database of another application (shaped like a browser history: no application_id,
-- user_version 0, foreign tables). Made with: sqlite3 foreign_app.db < foreign_app.sql
CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT, title TEXT, visit_count INTEGER);
CREATE TABLE moz_historyvisits (id INTEGER PRIMARY KEY, place_id INTEGER, visit_date INTEGER);
INSERT INTO moz_places VALUES (1, 'https://www.sqlite.org/', 'SQLite Home Page', 3);
INSERT INTO moz_historyvisits VALUES (1, 1, 1767225600000000);
