// Full-text search: matching, ranking, snippets, diacritics, safety of user text as a query.
#include <gtest/gtest.h>

#include "store_test_util.h"

using namespace tandem::store;

namespace {
// Runs FTS5's own consistency check of the index against the messages table; "" when sound.
std::string fts_integrity(const std::filesystem::path& db_path) {
    sqlite3* db = nullptr;
    sqlite3_open(db_path.c_str(), &db);
    char* err = nullptr;
    sqlite3_exec(db, "INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')", nullptr,
                 nullptr, &err);
    std::string out = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    return out;
}
}  // namespace

TEST(StoreSearch, RanksDenserMatchesFirstWithSnippets) {
    auto store = tandem::test::fresh_store("search-rank");
    int64_t c1 = store->create_conversation({"Marsupials"});
    int64_t c2 = store->create_conversation({"Travel"});
    int64_t dense = store->append_user_message(c1, "kangaroo kangaroo kangaroo facts");
    int64_t once = store->append_user_message(
        c2,
        "We drove for hours through the outback, saw red dust, tall termite mounds, a "
        "kangaroo by the road, endless fences, and finally reached the coast at night.");
    store->append_user_message(c2, "nothing relevant here");
    auto hits = store->search("kangaroo");
    ASSERT_EQ(hits.size(), 2u);
    EXPECT_EQ(hits[0].message_id, dense);
    EXPECT_EQ(hits[0].conversation_id, c1);
    EXPECT_EQ(hits[0].conversation_title, "Marsupials");
    EXPECT_EQ(hits[1].message_id, once);
    EXPECT_LT(hits[0].score, hits[1].score);  // bm25: lower is better
    EXPECT_EQ(hits[0].snippet, "[kangaroo] [kangaroo] [kangaroo] facts");
    // The long message is cut around the match.
    EXPECT_NE(hits[1].snippet.find("[kangaroo]"), std::string::npos) << hits[1].snippet;
    EXPECT_NE(hits[1].snippet.find("…"), std::string::npos) << hits[1].snippet;
    EXPECT_LT(hits[1].snippet.size(), 140u);
    EXPECT_EQ(store->search("kangaroo", 1).size(), 1u);
    auto custom = store->search("facts", 5, "<b>", "</b>");
    ASSERT_EQ(custom.size(), 1u);
    EXPECT_EQ(custom[0].snippet, "kangaroo kangaroo kangaroo <b>facts</b>");
}

TEST(StoreSearch, AllWordsMustMatchAndPrefixesWork) {
    auto store = tandem::test::fresh_store("search-words");
    int64_t c = store->create_conversation({"t"});
    int64_t both = store->append_user_message(c, "the quick brown fox");
    store->append_user_message(c, "the quick red car");
    auto hits = store->search("quick fox");
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].message_id, both);
    EXPECT_EQ(store->search("bro*").size(), 1u);
    EXPECT_EQ(store->search("bro").size(), 0u);
    EXPECT_EQ(store->search("QUICK").size(), 2u);  // case folded
    EXPECT_TRUE(store->search("   ").empty());
}

TEST(StoreSearch, DiacriticsAreFolded) {
    auto store = tandem::test::fresh_store("search-diacritics");
    int64_t c = store->create_conversation({"t"});
    int64_t id = store->append_user_message(c, "Un café à Lyon");
    auto hits = store->search("cafe");
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].message_id, id);
    EXPECT_EQ(hits[0].snippet, "Un [café] à Lyon");
    EXPECT_EQ(store->search("CAFÉ").size(), 1u);
}

TEST(StoreSearch, QuerySyntaxInUserTextIsLiteral) {
    auto store = tandem::test::fresh_store("search-syntax");
    int64_t c = store->create_conversation({"t"});
    store->append_user_message(c, "use AND or NOT in C++ (really) \"quoted\" col:value");
    // FTS5 operators, quotes, parentheses and column filters would be syntax errors or change
    // the meaning if passed through; they must just be words.
    for (const char* q :
         {"AND", "NOT", "\"quoted", "(really)", "col:value", "C++", "NEAR(", "*", "-"}) {
        EXPECT_NO_THROW(store->search(q)) << q;
    }
    EXPECT_EQ(store->search("(really)").size(), 1u);
    EXPECT_EQ(store->search("NOT").size(), 1u);
}

TEST(StoreSearch, IndexFollowsStreamingEditsAndDeletes) {
    ChatStore::Options o;
    o.stream_flush_interval = std::chrono::milliseconds(0);
    auto store = tandem::test::fresh_store("search-follow", o);
    int64_t c = store->create_conversation({"t"});
    int64_t u = store->append_user_message(c, "first draft about otters");
    auto s = store->begin_assistant_message(c, "m");
    s.append("platypus");
    EXPECT_EQ(store->search("platypus").size(), 1u);  // visible while streaming
    s.append(" and wombat");
    s.finish();
    EXPECT_EQ(store->search("wombat").size(), 1u);
    EXPECT_EQ(store->search("platypus wombat").size(), 1u);
    store->edit_message(u, "second draft about beavers");
    EXPECT_EQ(store->search("otters").size(), 1u);  // the old branch is still there
    EXPECT_EQ(store->search("beavers").size(), 1u);
    store->delete_conversation(c);
    EXPECT_TRUE(store->search("otters").empty());
    EXPECT_TRUE(store->search("wombat").empty());
    EXPECT_EQ(fts_integrity(store->path()), "");
}
