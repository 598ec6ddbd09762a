// Opening a store: inspect the file read-only, refuse what is not ours, then migrate.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "store/schema.h"
#include "store/store_impl.h"
#include "tandem/common/error.h"

namespace tandem::store {
namespace {

struct Inspection {
    bool fresh = false;  // no file, an empty file, or an empty SQLite database: ours to create
    int version = 0;
    bool no_file = false;  // absent or 0 bytes: created elsewhere and moved in whole
};

// The header's user_version (offset 60) and application_id (offset 68), big-endian, read as
// plain bytes for when SQLite cannot open the file read-only (a hot journal needs a rollback).
std::optional<std::pair<int, int64_t>> raw_header(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    unsigned char h[100];
    if (!f.read(reinterpret_cast<char*>(h), sizeof h)) return std::nullopt;
    if (std::memcmp(h, "SQLite format 3", 16) != 0) return std::nullopt;
    auto be32 = [&](int o) {
        return (uint32_t(h[o]) << 24) | (h[o + 1] << 16) | (h[o + 2] << 8) | h[o + 3];
    };
    return std::make_pair(int(int32_t(be32(60))), int64_t(int32_t(be32(68))));
}

std::string hex32(int64_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", unsigned(uint32_t(v)));
    return buf;
}

int64_t pragma_int(sql::Db& db, const char* name) {
    sql::Statement st(db, std::string("PRAGMA ") + name);
    if (!st.step()) throw Error("store: " + db.path() + ": PRAGMA " + name + " returned nothing");
    return st.int64(0);
}

// Reads the header fields through a read-only connection, so a file we refuse is never written.
Inspection inspect(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return {true, 0, true};
    if (std::filesystem::is_directory(path, ec))
        throw Error("store: " + path + ": is a directory, not a database file");
    if (std::filesystem::file_size(path, ec) == 0 && !ec) return {true, 0, true};

    sql::Db db(path, SQLITE_OPEN_READONLY);
    std::vector<std::string> tables;
    try {
        sql::Statement st(db, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name");
        while (st.step()) tables.push_back(st.text(0));
    } catch (const Error&) {
        int code = sqlite3_errcode(db.handle());
        if (code == SQLITE_NOTADB)
            throw Error(
                "store: " + path +
                ": not a SQLite database (not a Tandem chat store; the file was not changed)");
        if ((code & 0xff) == SQLITE_READONLY) {
            // An interrupted write left a hot journal that only a writer may roll back. That
            // is SQLite's job for our own file; someone else's we leave alone.
            auto header = raw_header(path);
            if (header && header->second == kApplicationId && header->first <= kSchemaVersion)
                return {false, header->first};
            throw Error("store: " + path +
                        ": holds an unfinished transaction of another program (" +
                        sqlite3_errmsg(db.handle()) +
                        "), not a Tandem chat store; the file was not changed");
        }
        if (code == SQLITE_CORRUPT)
            throw Error("store: " + path + ": the database file is damaged (" +
                        sqlite3_errmsg(db.handle()) + "); the file was not changed");
        throw;
    }
    int64_t application_id = pragma_int(db, "application_id");
    int version = int(pragma_int(db, "user_version"));

    if (application_id == 0 && version == 0 && tables.empty()) return {true, 0};
    if (application_id != kApplicationId) {
        std::string list;
        for (size_t i = 0; i < tables.size() && i < 5; ++i) list += (i ? ", " : "") + tables[i];
        if (tables.size() > 5) list += ", ...";
        throw Error("store: " + path +
                    ": a SQLite database of another application (application_id " +
                    hex32(application_id) + ", user_version " + std::to_string(version) +
                    ", tables: " + (list.empty() ? "none" : list) +
                    "), not a Tandem chat store; the file was not changed");
    }
    if (version > kSchemaVersion)
        throw Error("store: " + path + ": written by a newer Tandem (schema version " +
                    std::to_string(version) + ", this build knows up to " +
                    std::to_string(kSchemaVersion) + "); the file was not changed");
    if (version < 1)
        throw Error("store: " + path +
                    ": a Tandem chat store without a schema version (damaged); the file was not "
                    "changed");
    for (const char* required : {"conversations", "messages"}) {
        bool found = false;
        for (auto& t : tables) found = found || t == required;
        if (!found)
            throw Error("store: " + path + ": schema version " + std::to_string(version) +
                        " but table '" + required +
                        "' is missing (damaged); the file was not changed");
    }
    return {false, version};
}

void configure(sql::Db& db, int busy_timeout_ms) {
    sqlite3_busy_timeout(db.handle(), busy_timeout_ms);
    db.exec("PRAGMA foreign_keys = ON");
}

// WAL: readers never block the writer. synchronous=FULL: a committed message survives power
// loss, not only a crash of the process.
void configure_writer(sql::Db& w, int busy_timeout_ms) {
    configure(w, busy_timeout_ms);
    {
        sql::Statement wal(w, "PRAGMA journal_mode = WAL");
        if (!wal.step() || wal.text(0) != "wal")
            throw Error("store: " + w.path() + ": cannot switch the database to WAL mode");
    }
    w.exec("PRAGMA synchronous = FULL");
}

// Removes "<path>.creating-<pid>-*" files (and their -wal/-shm/-journal) of processes that died
// while creating the store.
void remove_abandoned_creations(const std::string& path) {
    std::filesystem::path p(path);
    std::filesystem::path dir = p.parent_path().empty() ? "." : p.parent_path();
    const std::string prefix = p.filename().string() + ".creating-";
    std::error_code ec;
    for (auto& e : std::filesystem::directory_iterator(dir, ec)) {
        std::string name = e.path().filename().string();
        if (name.rfind(prefix, 0) != 0) continue;
        long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
        if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH)
            std::filesystem::remove(e.path(), ec);
    }
}

// A new store is built beside `path` and moved in with one link()/rename(), so a crash during
// creation leaves either no store or a complete one, never a half-made file at `path`.
void create_new_file(const std::string& path, int busy_timeout_ms) {
    std::random_device rd;
    const std::string tmp =
        path + ".creating-" + std::to_string(getpid()) + "-" + std::to_string(rd());
    {
        sql::Db d(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        configure_writer(d, busy_timeout_ms);
        sql::Transaction tx(d);
        migrate(d, 0);
        tx.commit();
    }  // closing the last connection checkpoints the WAL into the file
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) == 0) {
        std::filesystem::rename(tmp, path, ec);  // an empty file holds nothing to lose
    } else if (::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
        ec = std::error_code(errno, std::generic_category());
    }  // EEXIST: another process created it first; use theirs
    std::filesystem::remove(tmp);
    if (ec) throw Error("store: " + path + ": cannot create the database: " + ec.message());
    // The new directory entry must be on disk too, or a power loss could drop the whole file.
    int dir = ::open(std::filesystem::path(path).parent_path().empty()
                         ? "."
                         : std::filesystem::path(path).parent_path().c_str(),
                     O_RDONLY | O_DIRECTORY);
    if (dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
}

}  // namespace

sql::Db& ChatStore::Impl::write_db() {
    if (!writer) throw Error("store: " + reader->path() + ": opened read-only, cannot write");
    return *writer;
}

int64_t now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

ChatStore::ChatStore(std::filesystem::path path, std::unique_ptr<Impl> impl)
    : path_(std::move(path)), impl_(std::move(impl)) {}

ChatStore::~ChatStore() = default;

std::unique_ptr<ChatStore> ChatStore::open(const std::filesystem::path& path, Options options) {
    const std::string p = path.string();
    Inspection found = inspect(p);
    auto impl = std::make_unique<Impl>();
    impl->options = options;

    if (options.read_only) {
        if (found.fresh) throw Error("store: " + p + ": no chat store there (nothing to read)");
        if (found.version != kSchemaVersion)
            throw Error("store: " + p + ": schema version " + std::to_string(found.version) +
                        " needs an upgrade to " + std::to_string(kSchemaVersion) +
                        "; open it once for writing (the app, or tandem-cli chats import)");
    } else {
        if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
        remove_abandoned_creations(p);
        if (found.no_file) create_new_file(p, options.busy_timeout_ms);
        impl->writer = std::make_unique<sql::Db>(p, SQLITE_OPEN_READWRITE);
        sql::Db& w = *impl->writer;
        configure_writer(w, options.busy_timeout_ms);
        sql::Transaction tx(w);
        // Another process may have created or migrated the file since inspect(): read again.
        int version = int(pragma_int(w, "user_version"));
        if (version > kSchemaVersion)
            throw Error("store: " + p + ": written by a newer Tandem (schema version " +
                        std::to_string(version) + ")");
        if (version < kSchemaVersion) migrate(w, version);
        tx.commit();
    }
    impl->reader = std::make_unique<sql::Db>(p, SQLITE_OPEN_READONLY);
    configure(*impl->reader, options.busy_timeout_ms);
    return std::unique_ptr<ChatStore>(new ChatStore(path, std::move(impl)));
}

std::filesystem::path ChatStore::default_path() {
    if (const char* e = std::getenv("TANDEM_CHATS_DB"); e && *e) return e;
    if (const char* h = std::getenv("TANDEM_HOME"); h && *h)
        return std::filesystem::path(h) / "chats.db";
    if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
        return std::filesystem::path(x) / "tandem" / "chats.db";
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home ? home : ".") / ".local" / "share" / "tandem" / "chats.db";
}

std::string ChatStore::integrity_check() {
    std::lock_guard lock(impl_->read_mu);
    sql::Statement st(*impl_->reader, "PRAGMA integrity_check");
    std::string out;
    while (st.step()) out += (out.empty() ? "" : "\n") + st.text(0);
    return out;
}

}  // namespace tandem::store
