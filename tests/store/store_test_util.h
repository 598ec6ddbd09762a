#pragma once
// Helpers of the store tests: a fresh store in a temporary folder, and direct SQL through the
// SQLite C API (not through the store) to check what really is in the file.
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures.h"
#include "tandem/store/chat_store.h"

namespace tandem::test {

inline std::filesystem::path store_data(const std::string& name) {
    return source_dir() / "tests" / "store" / "data" / name;
}

inline std::unique_ptr<store::ChatStore> fresh_store(const std::string& tag,
                                                     store::ChatStore::Options o = {}) {
    return store::ChatStore::open(temp_dir(tag) / "chats.db", o);
}

inline std::string file_bytes(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// Rows of a query as strings ("NULL" for null), columns joined by '|', through a separate
// connection (read-only unless `flags` say otherwise).
inline std::vector<std::string> sql_rows(const std::filesystem::path& db_path, const std::string& q,
                                         int flags = SQLITE_OPEN_READONLY) {
    sqlite3* db = nullptr;
    std::vector<std::string> rows;
    if (sqlite3_open_v2(db_path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
        ADD_FAILURE() << "cannot open " << db_path << ": " << sqlite3_errmsg(db);
        sqlite3_close(db);
        return rows;
    }
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, q.c_str(), -1, &st, nullptr) != SQLITE_OK) {
        ADD_FAILURE() << "prepare " << q << ": " << sqlite3_errmsg(db);
    } else {
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            std::string row;
            for (int c = 0; c < sqlite3_column_count(st); ++c) {
                auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
                row += (c ? "|" : "") + std::string(t ? t : "NULL");
            }
            rows.push_back(row);
        }
        if (rc != SQLITE_DONE) ADD_FAILURE() << "step " << q << ": " << sqlite3_errmsg(db);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rows;
}

inline std::string sql_one(const std::filesystem::path& db_path, const std::string& q,
                           int flags = SQLITE_OPEN_READONLY) {
    auto rows = sql_rows(db_path, q, flags);
    return rows.empty() ? std::string("<no row>") : rows[0];
}

}  // namespace tandem::test
