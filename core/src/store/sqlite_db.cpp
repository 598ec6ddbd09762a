#include "store/sqlite_db.h"

#include "tandem/common/error.h"

namespace tandem::store::sql {

Db::Db(const std::string& path, int flags) : path_(path) {
    int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_FULLMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
        sqlite3_close_v2(db_);
        db_ = nullptr;
        throw Error("store: " + path + ": cannot open: " + msg);
    }
    sqlite3_extended_result_codes(db_, 1);
}

Db::~Db() {
    sqlite3_close_v2(db_);
}

void Db::fail(std::string_view what, int rc) const {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    throw Error("store: " + path_ + ": " + std::string(what) + ": " + msg);
}

void Db::exec(std::string_view sql) {
    std::string s(sql);
    char* err = nullptr;
    int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        throw Error("store: " + path_ + ": " + msg);
    }
}

Statement::Statement(Db& db, std::string_view sql) : db_(db) {
    int rc = sqlite3_prepare_v2(db.handle(), sql.data(), int(sql.size()), &stmt_, nullptr);
    if (rc != SQLITE_OK) db.fail("prepare '" + std::string(sql.substr(0, 60)) + "'", rc);
}

Statement::~Statement() {
    sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int index, int64_t v) {
    if (int rc = sqlite3_bind_int64(stmt_, index, v); rc != SQLITE_OK) db_.fail("bind", rc);
    return *this;
}

Statement& Statement::bind(int index, double v) {
    if (int rc = sqlite3_bind_double(stmt_, index, v); rc != SQLITE_OK) db_.fail("bind", rc);
    return *this;
}

Statement& Statement::bind(int index, std::string_view v) {
    int rc = sqlite3_bind_text64(stmt_, index, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    if (rc != SQLITE_OK) db_.fail("bind", rc);
    return *this;
}

Statement& Statement::bind_null(int index) {
    if (int rc = sqlite3_bind_null(stmt_, index); rc != SQLITE_OK) db_.fail("bind", rc);
    return *this;
}

bool Statement::step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    std::string sql = sqlite3_sql(stmt_);
    sqlite3_reset(stmt_);
    db_.fail("'" + sql.substr(0, 60) + "'", rc);
}

void Statement::run() {
    while (step()) {
    }
}

void Statement::reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int col) const {
    return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}
int64_t Statement::int64(int col) const {
    return sqlite3_column_int64(stmt_, col);
}
double Statement::real(int col) const {
    return sqlite3_column_double(stmt_, col);
}

std::string Statement::text(int col) const {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, size_t(sqlite3_column_bytes(stmt_, col))) : std::string();
}

std::optional<int64_t> Statement::opt_int64(int col) const {
    if (is_null(col)) return std::nullopt;
    return int64(col);
}

std::optional<double> Statement::opt_real(int col) const {
    if (is_null(col)) return std::nullopt;
    return real(col);
}

Transaction::Transaction(Db& db) : db_(db) {
    db_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
    if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
    db_.exec("COMMIT");
    done_ = true;
}

}  // namespace tandem::store::sql
