// A bad or foreign file: a clear error, and the file stays byte-for-byte as it was (no journal,
// WAL or shared-memory file appears beside it either).
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "store_test_util.h"
#include "tandem/common/error.h"

using namespace tandem::store;

namespace {

std::set<std::string> names_in(const std::filesystem::path& dir) {
    std::set<std::string> out;
    for (auto& e : std::filesystem::directory_iterator(dir)) out.insert(e.path().filename());
    return out;
}

// Opens `file` with the store, expects tandem::Error containing `expected`, and checks that the
// file's bytes and the folder's contents did not change.
void expect_refused(const std::filesystem::path& file, const std::string& expected) {
    const std::string before = tandem::test::file_bytes(file);
    const size_t hash_before = std::hash<std::string>{}(before);
    const auto files_before = names_in(file.parent_path());
    try {
        ChatStore::open(file);
        ADD_FAILURE() << file << ": opened without error";
    } catch (const tandem::Error& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find(expected), std::string::npos) << msg;
        EXPECT_NE(msg.find(file.string()), std::string::npos)
            << "error does not name the file: " << msg;
    }
    const std::string after = tandem::test::file_bytes(file);
    EXPECT_EQ(std::hash<std::string>{}(after), hash_before) << file;
    EXPECT_EQ(after, before) << file;
    EXPECT_EQ(names_in(file.parent_path()), files_before);
}

std::filesystem::path copy_fixture(const std::string& name) {
    auto dst = tandem::test::temp_dir("refuse") / name;
    std::filesystem::copy_file(tandem::test::store_data(name), dst);
    return dst;
}

std::filesystem::path write_file(const std::string& name, const std::string& bytes) {
    auto p = tandem::test::temp_dir("refuse") / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
}

}  // namespace

TEST(StoreOpenErrors, TextFileIsNotADatabase) {
    expect_refused(write_file("notes.db", "These are my notes, not a database.\n"),
                   "not a SQLite database");
}

TEST(StoreOpenErrors, BinaryFileIsNotADatabase) {
    std::string gguf = "GGUF";
    gguf += std::string("\x03\x00\x00\x00", 4);
    for (int i = 0; i < 8192; ++i) gguf.push_back(char((i * 7919) & 0xff));
    expect_refused(write_file("model.gguf", gguf), "not a SQLite database");
}

TEST(StoreOpenErrors, TruncatedDatabaseIsRefused) {
    std::string v1 = tandem::test::file_bytes(tandem::test::store_data("schema_v1.db"));
    expect_refused(write_file("truncated.db", v1.substr(0, 5000)), "the file was not changed");
}

TEST(StoreOpenErrors, DatabaseOfAnotherApplication) {
    auto p = copy_fixture("foreign_app.db");
    expect_refused(p, "a SQLite database of another application");
    expect_refused(p, "tables: moz_historyvisits, moz_places");
}

TEST(StoreOpenErrors, AnotherApplicationUsingUserVersion) {
    expect_refused(copy_fixture("other_versioned_app.db"),
                   "application_id 0x00000000, user_version 2");
}

TEST(StoreOpenErrors, DatabaseFromANewerTandem) {
    expect_refused(copy_fixture("newer_version.db"),
                   "written by a newer Tandem (schema version 99, this build knows up to 2)");
}

TEST(StoreOpenErrors, DirectoryIsRefused) {
    auto dir = tandem::test::temp_dir("refuse-dir");
    EXPECT_THROW(ChatStore::open(dir), tandem::Error);
}

TEST(StoreOpenErrors, EmptyFileBecomesAStore) {
    auto p = write_file("empty.db", "");
    auto store = ChatStore::open(p);
    EXPECT_EQ(tandem::test::sql_one(p, "PRAGMA user_version"), std::to_string(kSchemaVersion));
    EXPECT_EQ(store->integrity_check(), "ok");
}
