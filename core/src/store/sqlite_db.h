#pragma once
// Small RAII wrappers over the SQLite C API: one connection (Db) and one prepared statement
// (Statement). Every failure throws tandem::Error naming the database file and SQLite's message.
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tandem::store::sql {

class Db {
  public:
    // flags: SQLITE_OPEN_READONLY or SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE (FULLMUTEX added).
    Db(const std::string& path, int flags);
    ~Db();
    Db(const Db&) = delete;
    Db& operator=(const Db&) = delete;

    sqlite3* handle() const { return db_; }
    const std::string& path() const { return path_; }
    // Runs one or more statements without results.
    void exec(std::string_view sql);
    int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
    int changes() const { return sqlite3_changes(db_); }
    // "store: <path>: <what>: <sqlite message>"
    [[noreturn]] void fail(std::string_view what, int rc) const;

  private:
    sqlite3* db_ = nullptr;
    std::string path_;
};

class Statement {
  public:
    Statement(Db& db, std::string_view sql);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    // Binds are 1-based like SQLite's; they return *this so calls chain.
    Statement& bind(int index, int64_t v);
    Statement& bind(int index, int v) { return bind(index, int64_t(v)); }
    Statement& bind(int index, double v);
    Statement& bind(int index, std::string_view v);
    Statement& bind(int index, const char* v) { return bind(index, std::string_view(v)); }
    Statement& bind(int index, const std::string& v) { return bind(index, std::string_view(v)); }
    Statement& bind_null(int index);
    template <class T>
    Statement& bind(int index, const std::optional<T>& v) {
        return v ? bind(index, *v) : bind_null(index);
    }

    // Advances; true while a row is available.
    bool step();
    // Runs a statement that returns no rows (or ignores them).
    void run();
    void reset();

    bool is_null(int col) const;
    int64_t int64(int col) const;
    double real(int col) const;
    std::string text(int col) const;
    std::optional<int64_t> opt_int64(int col) const;
    std::optional<double> opt_real(int col) const;

  private:
    Db& db_;
    sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back when destroyed without commit() (exception unwinding).
class Transaction {
  public:
    explicit Transaction(Db& db);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

  private:
    Db& db_;
    bool done_ = false;
};

}  // namespace tandem::store::sql
