// Migration from every earlier schema version, from real files made by the sqlite3 tool
// (tests/store/data/schema_v<N>.sql -> .db).
#include <gtest/gtest.h>

#include "store_test_util.h"
#include "tandem/common/error.h"

using namespace tandem::store;
using tandem::test::sql_one;
using tandem::test::sql_rows;

namespace {
std::filesystem::path copy_fixture(const std::string& name, const std::string& tag) {
    auto dst = tandem::test::temp_dir(tag) / name;
    std::filesystem::copy_file(tandem::test::store_data(name), dst);
    return dst;
}
const char* const kSchemaQuery =
    "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name";
}  // namespace

TEST(StoreMigration, V1FileBecomesV2WithItsDataIntact) {
    auto db = copy_fixture("schema_v1.db", "mig-v1");
    ASSERT_EQ(sql_one(db, "PRAGMA user_version"), "1");
    auto store = ChatStore::open(db);
    EXPECT_EQ(sql_one(db, "PRAGMA user_version"), "2");
    EXPECT_EQ(sql_one(db, "PRAGMA application_id"), std::to_string(kApplicationId));
    EXPECT_EQ(sql_one(db, "PRAGMA journal_mode"), "wal");
    EXPECT_EQ(store->integrity_check(), "ok");
    EXPECT_EQ(sql_one(db, "PRAGMA foreign_key_check"), "<no row>");

    // Conversation 1: the regenerated reply is the selected branch; 2 of 2 siblings.
    Conversation c1 = store->conversation(1);
    EXPECT_EQ(c1.title, "Trip to Lyon");
    EXPECT_TRUE(c1.pinned);
    EXPECT_EQ(c1.sampling["top_p"], 0.9);
    auto path = store->active_path(1);
    ASSERT_EQ(path.size(), 4u);
    EXPECT_EQ(path[1].id, 3);
    EXPECT_EQ(path[1].sibling_index, 1);
    EXPECT_EQ(path[1].sibling_count, 2);
    // New metadata columns, filled from what version 1 knew.
    EXPECT_EQ(path[1].model, "llama-3.2-3b-instruct-q4_k_m");
    EXPECT_EQ(path[0].model, "");  // user messages have no model
    EXPECT_EQ(path[1].updated_at_ms, 1767225620000);
    EXPECT_EQ(path[1].finished_at_ms, 1767225620000);
    EXPECT_EQ(path[3].status, MessageStatus::Interrupted);
    EXPECT_EQ(path[3].finish_reason, "interrupted");
    EXPECT_FALSE(path[3].completion_tokens.has_value());

    // Conversation 2: archived; the edited first message (a second root) is selected.
    EXPECT_TRUE(store->conversation(2).archived);
    auto p2 = store->active_path(2);
    ASSERT_EQ(p2.size(), 2u);
    EXPECT_EQ(p2[0].id, 7);
    EXPECT_EQ(p2[0].sibling_count, 2);
    EXPECT_EQ(p2[1].status, MessageStatus::Streaming);
    EXPECT_FALSE(p2[1].finished_at_ms.has_value());
    EXPECT_EQ(store->recover_interrupted(), 1);

    // The full-text index was built from the old messages (diacritics folded).
    auto hits = store->search("cafe");
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].message_id, 3);
    EXPECT_EQ(store->search("lifetimes").size(), 2u);

    // The migrated file is usable: new messages continue the selected path.
    int64_t u = store->append_user_message(1, "Thanks!");
    EXPECT_EQ(store->message(u).parent_id, 5);
}

TEST(StoreMigration, MigratedSchemaEqualsAFreshOne) {
    auto migrated = copy_fixture("schema_v1.db", "mig-schema");
    ChatStore::open(migrated);
    auto fresh_dir = tandem::test::temp_dir("mig-fresh");
    ChatStore::open(fresh_dir / "fresh.db");
    auto a = sql_rows(migrated, kSchemaQuery);
    auto b = sql_rows(fresh_dir / "fresh.db", kSchemaQuery);
    EXPECT_EQ(a, b);
    EXPECT_GT(a.size(), 8u);  // tables, indexes, triggers, the FTS tables
}

TEST(StoreMigration, ReopeningACurrentFileChangesNothing) {
    auto db = copy_fixture("schema_v1.db", "mig-reopen");
    ChatStore::open(db);
    auto before = sql_rows(db, "SELECT * FROM messages ORDER BY id");
    auto store = ChatStore::open(db);
    EXPECT_EQ(sql_rows(db, "SELECT * FROM messages ORDER BY id"), before);
    EXPECT_EQ(sql_one(db, "PRAGMA user_version"), "2");
}

TEST(StoreMigration, ReadOnlyOpenOfAnOldFileAsksForAnUpgradeAndWritesNothing) {
    auto db = copy_fixture("schema_v1.db", "mig-ro");
    std::string bytes = tandem::test::file_bytes(db);
    ChatStore::Options o;
    o.read_only = true;
    try {
        ChatStore::open(db, o);
        FAIL() << "no error";
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("schema version 1 needs an upgrade"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(tandem::test::file_bytes(db), bytes);
}

TEST(StoreMigration, ReadOnlyStoreReadsButRefusesWrites) {
    auto dir = tandem::test::temp_dir("ro");
    {
        auto w = ChatStore::open(dir / "c.db");
        int64_t c = w->create_conversation({"t"});
        w->append_user_message(c, "hello");
    }
    ChatStore::Options o;
    o.read_only = true;
    auto r = ChatStore::open(dir / "c.db", o);
    EXPECT_EQ(r->list_conversations().size(), 1u);
    EXPECT_EQ(r->search("hello").size(), 1u);
    EXPECT_THROW(r->create_conversation({"x"}), tandem::Error);
    EXPECT_THROW(r->append_user_message(1, "x"), tandem::Error);
    EXPECT_THROW(ChatStore::open(dir / "missing.db", o), tandem::Error);
    EXPECT_FALSE(std::filesystem::exists(dir / "missing.db"));
}
