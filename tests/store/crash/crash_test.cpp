// The crash test: store-crash-writer streams conversations into one database and is killed with
// SIGKILL at random moments (during open, migration, appends, streaming, finishing). After every
// kill the database must pass PRAGMA integrity_check (and FTS5's own check), and every message
// whose commit had returned — in this run or any earlier run on the same file — must be there.
// Every 20 runs start from a new file (creation under kill) and every 20 from the real schema v1
// fixture (migration under kill). TANDEM_CRASH_RUNS / TANDEM_CRASH_SEED override the defaults.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>

#include "../store_test_util.h"
#include "crash_protocol.h"

namespace fs = std::filesystem;
using namespace tandem::test;
using namespace tandem::test::crash;

namespace {

struct Expectation {
    enum Kind { User, Streaming, Finished } kind;
    std::string text;   // User: exact content
    size_t length = 0;  // Streaming: at least; Finished: exactly
};

struct Child {
    pid_t pid = -1;
    int out = -1;  // read end of its stdout
};

Child spawn_writer(const fs::path& db, unsigned seed, int interval_ms) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    std::string exe = (bin_dir() / "store-crash-writer").string();
    std::string seed_s = std::to_string(seed), interval_s = std::to_string(interval_ms);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(exe.c_str(), exe.c_str(), db.c_str(), seed_s.c_str(), interval_s.c_str(), nullptr);
        _exit(127);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    return {pid, fds[0]};
}

// Reads what is available until `deadline` (or EOF), appending to `buf`. Returns false at EOF.
bool read_until(int fd, std::string& buf, std::chrono::steady_clock::time_point deadline) {
    char tmp[65536];
    while (true) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
        if (left < 0) return true;
        pollfd p{fd, POLLIN, 0};
        int r = poll(&p, 1, int(left));
        if (r <= 0) continue;
        ssize_t n = read(fd, tmp, sizeof tmp);
        if (n == 0) return false;
        if (n > 0) buf.append(tmp, size_t(n));
    }
}

void drain(int fd, std::string& buf) {
    fcntl(fd, F_SETFL, 0);
    char tmp[65536];
    ssize_t n;
    while ((n = read(fd, tmp, sizeof tmp)) > 0) buf.append(tmp, size_t(n));
}

// Complete lines only: a line cut by the kill was never fully reported.
void parse_reports(const std::string& out, std::map<int64_t, Expectation>& expect,
                   int& conversations) {
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        if (in.eof()) break;  // no '\n' after it
        std::istringstream ls(line);
        char kind;
        int64_t id;
        ls >> kind >> id;
        if (kind == 'C') {
            ++conversations;
        } else if (kind == 'U') {
            std::string text;
            std::getline(ls, text);
            expect[id] = {Expectation::User, text.substr(1), 0};
        } else if (kind == 'S' || kind == 'F') {
            size_t len;
            ls >> len;
            expect[id] = {kind == 'S' ? Expectation::Streaming : Expectation::Finished, "", len};
        } else {
            ADD_FAILURE() << "unknown report: " << line;
        }
    }
}

// integrity_check, foreign_key_check and the FTS5 index check, through a plain connection. It
// may write: a kill during a rollback-journal write (a v1 file turning to WAL) leaves a hot
// journal, and rolling it back is what the next opener of the file must do.
std::string database_problems(const fs::path& db) {
    std::string problems;
    std::string ic = sql_one(db, "PRAGMA integrity_check", SQLITE_OPEN_READWRITE);
    if (ic != "ok") problems += "integrity_check: " + ic + "; ";
    auto fk = sql_rows(db, "PRAGMA foreign_key_check");
    if (!fk.empty()) problems += "foreign_key_check: " + fk[0] + "; ";
    sqlite3* h = nullptr;
    sqlite3_open(db.c_str(), &h);
    char* err = nullptr;
    bool has_fts =
        sql_one(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'messages_fts'") == "1";
    if (has_fts &&
        sqlite3_exec(h, "INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')",
                     nullptr, nullptr, &err) != SQLITE_OK)
        problems += std::string("fts: ") + (err ? err : "?") + "; ";
    sqlite3_free(err);
    sqlite3_close(h);
    return problems;
}

std::string files_in(const fs::path& dir) {
    std::string out;
    for (auto& e : fs::directory_iterator(dir))
        out += e.path().filename().string() + " (" + std::to_string(e.file_size()) + " bytes) ";
    return out;
}

int env_int(const char* name, int fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : fallback;
}

}  // namespace

TEST(StoreCrash, SigkillAtRandomMomentsLosesNoCommittedMessage) {
    const int runs = env_int("TANDEM_CRASH_RUNS", 200);
    const unsigned seed = unsigned(env_int("TANDEM_CRASH_SEED", 20261121));
    ASSERT_TRUE(fs::exists(bin_dir() / "store-crash-writer")) << "build store-crash-writer first";
    std::mt19937 rng(seed);
    const fs::path dir = temp_dir("crash");
    const fs::path db = dir / "chats.db";
    std::map<int64_t, Expectation> expect;  // everything committed into the current file
    int conversations = 0, abandoned_creations = 0, killed_before_migration = 0,
        killed_with_reports = 0, checked_messages = 0, v1_epochs = 0;
    auto start = std::chrono::steady_clock::now();

    for (int run = 0; run < runs; ++run) {
        if (run % 20 == 0 || run % 20 == 10) {
            for (const char* suffix : {"", "-wal", "-shm", "-journal"})
                fs::remove(db.string() + suffix);
            expect.clear();
            if (run % 20 == 10) {
                fs::copy_file(store_data("schema_v1.db"), db);
                ++v1_epochs;
            }
        }
        unsigned writer_seed = rng();
        int interval = rng() % 3 == 0 ? 2 : 0;
        // The first runs of each file are killed within its first 150 ms (creating a new file
        // or migrating the v1 one take about 130 ms here), a tenth of the others within their
        // first 60 ms (start, open); the rest at a random moment after the first reported commit.
        bool early = run % 10 < 4 || rng() % 10 == 0;
        int delay_us = run % 10 < 4 ? int(rng() % 150000)
                       : early      ? int(rng() % 60000)
                                    : int(rng() % 80000);
        Child child = spawn_writer(db, writer_seed, interval);
        std::string out;
        auto now = std::chrono::steady_clock::now;
        bool alive = true;
        if (!early) {
            auto limit = now() + std::chrono::seconds(10);
            while (alive && out.find('\n') == std::string::npos && now() < limit)
                alive = read_until(child.out, out, now() + std::chrono::milliseconds(1));
        }
        if (alive) alive = read_until(child.out, out, now() + std::chrono::microseconds(delay_us));
        kill(child.pid, SIGKILL);
        int status = 0;
        waitpid(child.pid, &status, 0);
        drain(child.out, out);
        close(child.out);
        ASSERT_TRUE(alive && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
            << "run " << run << ": the writer ended by itself (status " << status << "): " << out;
        size_t before = expect.size();
        parse_reports(out, expect, conversations);
        if (expect.size() > before) ++killed_with_reports;

        if (files_in(dir).find(".creating-") != std::string::npos) ++abandoned_creations;
        if (!fs::exists(db)) continue;  // killed before the file was created
        if (sql_one(db, "PRAGMA user_version", SQLITE_OPEN_READWRITE) == "1")
            ++killed_before_migration;
        ASSERT_EQ(database_problems(db), "")
            << "run " << run << " (seed " << seed << "), files: " << files_in(dir);
        // Every reported commit, from this run and the earlier ones on this file.
        std::map<int64_t, std::pair<std::string, std::string>> rows;  // id -> content, status
        sqlite3* h = nullptr;
        ASSERT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(h, "SELECT id, content, status FROM messages", -1, &st, nullptr);
        while (sqlite3_step(st) == SQLITE_ROW)
            rows[sqlite3_column_int64(st, 0)] = {
                std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)),
                            size_t(sqlite3_column_bytes(st, 1))),
                reinterpret_cast<const char*>(sqlite3_column_text(st, 2))};
        sqlite3_finalize(st);
        sqlite3_close(h);
        for (auto& [id, e] : expect) {
            auto it = rows.find(id);
            ASSERT_NE(it, rows.end())
                << "run " << run << ": committed message " << id << " is gone";
            const auto& [content, state] = it->second;
            switch (e.kind) {
                case Expectation::User:
                    ASSERT_EQ(content, e.text) << "run " << run << ", message " << id;
                    break;
                case Expectation::Streaming:
                    ASSERT_GE(content.size(), e.length) << "run " << run << ", message " << id;
                    ASSERT_EQ(content, assistant_text(content.size())) << "run " << run;
                    break;
                case Expectation::Finished:
                    ASSERT_EQ(content, assistant_text(e.length))
                        << "run " << run << ", message " << id;
                    ASSERT_EQ(state, "complete") << "run " << run << ", message " << id;
                    break;
            }
            ++checked_messages;
        }
        if (run % 20 >= 10 && rows.count(3)) {  // the v1 fixture's own messages survive too
            ASSERT_EQ(rows[3].first, "A bouchon: try the quenelles at a café in Vieux Lyon.");
        }
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "crash test: %d runs (seed %u), %d killed after reporting commits, %d v1 migrations, "
        "%d runs seeing leftovers of a killed creation, %d kills leaving a v1 file, %d "
        "conversations, %d message checks, "
        "%.1f s\n",
        runs, seed, killed_with_reports, v1_epochs, abandoned_creations, killed_before_migration,
        conversations, checked_messages, seconds);

    EXPECT_GT(killed_with_reports, runs / 2);  // the kills really landed among commits
    // And the surviving file still opens through the store and reads.
    auto store = tandem::store::ChatStore::open(db);
    store->recover_interrupted();
    for (auto& c : store->list_conversations(true)) store->active_path(c.id);
    // Opening cleaned up what the creations killed half-way left behind.
    EXPECT_EQ(files_in(dir).find(".creating-"), std::string::npos) << files_in(dir);
}
