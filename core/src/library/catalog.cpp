#include "tandem/library/catalog.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "tandem/common/error.h"

namespace tandem::library {
namespace {

constexpr int kSchemaVersion = 1;

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS models (
    id              INTEGER PRIMARY KEY,
    name            TEXT NOT NULL,
    path            TEXT NOT NULL UNIQUE,   -- first (or only) file
    files           TEXT NOT NULL,          -- JSON [{path, size, sha256}] in part order
    architecture    TEXT NOT NULL DEFAULT '',
    parameters      INTEGER NOT NULL DEFAULT 0,
    quant           TEXT NOT NULL DEFAULT '',
    quant_mix       TEXT NOT NULL DEFAULT '{}',  -- JSON {type: bytes}
    size_bytes      INTEGER NOT NULL DEFAULT 0,
    context_length  INTEGER NOT NULL DEFAULT 0,
    sha256          TEXT NOT NULL DEFAULT '',    -- of the first file
    source_repo     TEXT NOT NULL DEFAULT '',
    source_revision TEXT NOT NULL DEFAULT '',
    managed         INTEGER NOT NULL DEFAULT 0,
    added_at        INTEGER NOT NULL,
    last_used_at    INTEGER NOT NULL DEFAULT 0
);
)sql";

int64_t now_s() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

class Stmt {
  public:
    Stmt(sqlite3* db, const std::string& sql, const std::filesystem::path& file) : file_(file) {
        if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st_, nullptr) != SQLITE_OK)
            throw Error("library: " + file.string() + ": " + sqlite3_errmsg(db));
    }
    ~Stmt() { sqlite3_finalize(st_); }
    Stmt& bind(int i, const std::string& v) {
        sqlite3_bind_text(st_, i, v.c_str(), int(v.size()), SQLITE_TRANSIENT);
        return *this;
    }
    Stmt& bind(int i, int64_t v) {
        sqlite3_bind_int64(st_, i, v);
        return *this;
    }
    bool step() {
        int rc = sqlite3_step(st_);
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        throw Error("library: " + file_.string() + ": " + sqlite3_errmsg(sqlite3_db_handle(st_)));
    }
    std::string text(int c) const {
        auto* p = sqlite3_column_text(st_, c);
        return p ? reinterpret_cast<const char*>(p) : "";
    }
    int64_t i64(int c) const { return sqlite3_column_int64(st_, c); }

  private:
    sqlite3_stmt* st_ = nullptr;
    std::filesystem::path file_;
};

const char* kColumns =
    "id, name, files, architecture, parameters, quant, quant_mix, size_bytes, context_length, "
    "source_repo, source_revision, managed, added_at, last_used_at";

ModelRecord read_row(const Stmt& s, const std::filesystem::path& db) {
    ModelRecord r;
    r.id = s.i64(0);
    r.name = s.text(1);
    try {
        const nlohmann::json files = nlohmann::json::parse(s.text(2));
        const nlohmann::json mix = nlohmann::json::parse(s.text(6));
        for (const auto& f : files)
            r.files.push_back({f.at("path").get<std::string>(), f.at("size").get<uint64_t>(),
                               f.at("sha256").get<std::string>()});
        for (auto it = mix.begin(); it != mix.end(); ++it)
            r.quant_mix[it.key()] = it.value().get<uint64_t>();
    } catch (const std::exception& e) {
        throw Error("library: " + db.string() + ": model " + std::to_string(r.id) +
                    " has a damaged file list: " + e.what());
    }
    if (r.files.empty())
        throw Error("library: " + db.string() + ": model " + std::to_string(r.id) +
                    " has no files");
    r.architecture = s.text(3);
    r.parameters = uint64_t(s.i64(4));
    r.quant = s.text(5);
    r.size_bytes = uint64_t(s.i64(7));
    r.context_length = uint64_t(s.i64(8));
    r.source_repo = s.text(9);
    r.source_revision = s.text(10);
    r.managed = s.i64(11) != 0;
    r.added_at = s.i64(12);
    r.last_used_at = s.i64(13);
    return r;
}

}  // namespace

Catalog::Catalog(const std::filesystem::path& db_path) : path_(db_path) {
    std::error_code ec;
    if (db_path.has_parent_path()) std::filesystem::create_directories(db_path.parent_path(), ec);
    if (sqlite3_open_v2(db_path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                        nullptr) != SQLITE_OK) {
        std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        throw Error("library: cannot open catalog " + db_path.string() + ": " + msg);
    }
    sqlite3_busy_timeout(db_, 5000);
    auto exec = [&](const char* sql) {
        char* err = nullptr;
        if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
            std::string msg = err ? err : "unknown error";
            sqlite3_free(err);
            sqlite3_close(db_);
            db_ = nullptr;
            throw Error("library: catalog " + db_path.string() + ": " + msg);
        }
    };
    exec("PRAGMA journal_mode=WAL;");
    int version = 0;
    {
        Stmt s(db_, "PRAGMA user_version", path_);
        if (s.step()) version = int(s.i64(0));
    }
    if (version > kSchemaVersion) {
        sqlite3_close(db_);
        db_ = nullptr;
        throw Error("library: catalog " + db_path.string() + " has schema version " +
                    std::to_string(version) + ", newer than this build knows (" +
                    std::to_string(kSchemaVersion) + ")");
    }
    exec(kSchema);
    exec("PRAGMA user_version = 1;");
}

Catalog::~Catalog() {
    if (db_) sqlite3_close(db_);
}

int64_t Catalog::upsert(ModelRecord& rec) {
    if (rec.files.empty()) throw Error("library: a model record needs at least one file");
    nlohmann::json files = nlohmann::json::array();
    for (const auto& f : rec.files)
        files.push_back({{"path", f.path.string()}, {"size", f.size}, {"sha256", f.sha256}});
    nlohmann::json mix = nlohmann::json::object();
    for (const auto& [k, v] : rec.quant_mix) mix[k] = v;
    if (rec.added_at == 0) rec.added_at = now_s();
    Stmt s(db_,
           "INSERT INTO models (name, path, files, architecture, parameters, quant, quant_mix, "
           "size_bytes, context_length, sha256, source_repo, source_revision, managed, added_at, "
           "last_used_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15) "
           "ON CONFLICT(path) DO UPDATE SET name=?1, files=?3, architecture=?4, parameters=?5, "
           "quant=?6, quant_mix=?7, size_bytes=?8, context_length=?9, sha256=?10, "
           "source_repo=?11, source_revision=?12, managed=?13 RETURNING id, added_at",
           path_);
    s.bind(1, rec.name)
        .bind(2, rec.path().string())
        .bind(3, files.dump())
        .bind(4, rec.architecture)
        .bind(5, int64_t(rec.parameters))
        .bind(6, rec.quant)
        .bind(7, mix.dump())
        .bind(8, int64_t(rec.size_bytes))
        .bind(9, int64_t(rec.context_length))
        .bind(10, rec.files.front().sha256)
        .bind(11, rec.source_repo)
        .bind(12, rec.source_revision)
        .bind(13, int64_t(rec.managed ? 1 : 0))
        .bind(14, rec.added_at)
        .bind(15, rec.last_used_at);
    if (!s.step()) throw Error("library: " + path_.string() + ": insert returned nothing");
    rec.id = s.i64(0);
    rec.added_at = s.i64(1);
    while (s.step()) {
    }
    return rec.id;
}

std::vector<ModelRecord> Catalog::list() const {
    Stmt s(db_,
           std::string("SELECT ") + kColumns +
               " FROM models ORDER BY last_used_at DESC, name COLLATE NOCASE, id",
           path_);
    std::vector<ModelRecord> out;
    while (s.step()) out.push_back(read_row(s, path_));
    return out;
}

std::optional<ModelRecord> Catalog::get(int64_t id) const {
    Stmt s(db_, std::string("SELECT ") + kColumns + " FROM models WHERE id = ?1", path_);
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    return read_row(s, path_);
}

std::optional<ModelRecord> Catalog::find(const std::string& key) const {
    if (!key.empty() && std::all_of(key.begin(), key.end(), ::isdigit))
        if (auto r = get(std::stoll(key))) return r;
    auto all = list();
    std::string k = lower(key);
    auto pick = [&](auto pred) -> std::optional<ModelRecord> {
        for (const auto& r : all)
            if (pred(r)) return r;
        return std::nullopt;
    };
    if (auto r = pick([&](const ModelRecord& r) { return r.path().string() == key; })) return r;
    if (auto r = pick([&](const ModelRecord& r) {
            return !r.source_repo.empty() && lower(r.source_repo + ":" + r.quant) == k;
        }))
        return r;
    if (auto r = pick([&](const ModelRecord& r) { return lower(r.source_repo) == k; })) return r;
    if (auto r = pick([&](const ModelRecord& r) { return lower(r.name) == k; })) return r;
    return pick([&](const ModelRecord& r) { return lower(r.path().filename().string()) == k; });
}

bool Catalog::remove(int64_t id) {
    Stmt s(db_, "DELETE FROM models WHERE id = ?1", path_);
    s.bind(1, id);
    s.step();
    return sqlite3_changes(db_) > 0;
}

void Catalog::touch(int64_t id) {
    Stmt s(db_, "UPDATE models SET last_used_at = ?1 WHERE id = ?2", path_);
    s.bind(1, now_s()).bind(2, id);
    s.step();
}

}  // namespace tandem::library
