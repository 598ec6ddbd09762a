// Conversation records: create, change, list order, archive, delete (with cascade).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <thread>

#include "store_test_util.h"
#include "tandem/common/error.h"

using namespace tandem::store;
using tandem::test::sql_one;

TEST(StoreConversations, CreateStoresEveryField) {
    auto store = tandem::test::fresh_store("conv-create");
    NewConversation nc;
    nc.title = "Plan a trip";
    nc.model = "llama-3.2-3b";
    nc.system_prompt = "Be brief.";
    nc.sampling = {{"temperature", 0.7}, {"top_k", 40}};
    int64_t id = store->create_conversation(nc);
    Conversation c = store->conversation(id);
    EXPECT_EQ(c.title, "Plan a trip");
    EXPECT_EQ(c.model, "llama-3.2-3b");
    EXPECT_EQ(c.system_prompt, "Be brief.");
    EXPECT_EQ(c.sampling["top_k"], 40);
    EXPECT_DOUBLE_EQ(c.sampling["temperature"].get<double>(), 0.7);
    EXPECT_FALSE(c.pinned);
    EXPECT_FALSE(c.archived);
    EXPECT_EQ(c.message_count, 0);
    EXPECT_GT(c.created_at_ms, 1700000000000);  // a real clock, in milliseconds
    EXPECT_EQ(c.created_at_ms, c.updated_at_ms);
    // What the file holds, read without the store.
    EXPECT_EQ(
        sql_one(store->path(), "SELECT title, model, system_prompt, sampling FROM conversations"),
        "Plan a trip|llama-3.2-3b|Be brief.|{\"temperature\":0.7,\"top_k\":40}");
}

TEST(StoreConversations, SamplingMustBeAnObject) {
    auto store = tandem::test::fresh_store("conv-sampling");
    NewConversation nc;
    nc.sampling = nlohmann::json::array({1, 2});
    EXPECT_THROW(store->create_conversation(nc), tandem::Error);
    int64_t id = store->create_conversation({});
    EXPECT_THROW(store->set_sampling(id, 0.5), tandem::Error);
    store->set_sampling(id, {{"min_p", 0.05}});
    EXPECT_DOUBLE_EQ(store->conversation(id).sampling["min_p"].get<double>(), 0.05);
}

TEST(StoreConversations, RenameAndSettingsChangeTheRecord) {
    auto store = tandem::test::fresh_store("conv-rename");
    int64_t id = store->create_conversation({"old", "m1", "", nlohmann::json::object()});
    int64_t created = store->conversation(id).updated_at_ms;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    store->rename_conversation(id, "new title");
    store->set_model(id, "m2");
    store->set_system_prompt(id, "You are terse.");
    Conversation c = store->conversation(id);
    EXPECT_EQ(c.title, "new title");
    EXPECT_EQ(c.model, "m2");
    EXPECT_EQ(c.system_prompt, "You are terse.");
    EXPECT_GT(c.updated_at_ms, created);
}

TEST(StoreConversations, UnknownIdsAreErrorsNamingTheId) {
    auto store = tandem::test::fresh_store("conv-unknown");
    try {
        store->rename_conversation(42, "x");
        FAIL() << "no error";
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("no conversation with id 42"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW(store->conversation(42), tandem::Error);
    EXPECT_THROW(store->delete_conversation(42), tandem::Error);
    EXPECT_THROW(store->set_archived(42, true), tandem::Error);
    EXPECT_THROW(store->append_user_message(42, "hi"), tandem::Error);
    EXPECT_THROW(store->active_path(42), tandem::Error);
}

TEST(StoreConversations, ListPutsPinnedFirstThenRecentAndHidesArchived) {
    auto store = tandem::test::fresh_store("conv-list");
    int64_t a = store->create_conversation({"a"});
    int64_t b = store->create_conversation({"b"});
    int64_t c = store->create_conversation({"c"});
    int64_t d = store->create_conversation({"d"});
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    store->append_user_message(a, "bump a");  // a becomes the most recent
    store->set_pinned(c, true);
    store->set_archived(d, true);
    auto list = store->list_conversations();
    std::vector<int64_t> ids;
    for (auto& x : list) ids.push_back(x.id);
    EXPECT_EQ(ids, (std::vector<int64_t>{c, a, b}));
    auto all = store->list_conversations(true);
    ASSERT_EQ(all.size(), 4u);
    EXPECT_TRUE(store->conversation(d).archived);
    EXPECT_TRUE(store->conversation(c).pinned);
    EXPECT_EQ(store->conversation(a).message_count, 1);
    store->set_archived(d, false);
    EXPECT_EQ(store->list_conversations().size(), 4u);
}

TEST(StoreConversations, DeleteRemovesMessagesAndTheirIndexEntries) {
    auto store = tandem::test::fresh_store("conv-delete");
    int64_t keep = store->create_conversation({"keep"});
    int64_t gone = store->create_conversation({"gone"});
    store->append_user_message(keep, "penguins of the keep conversation");
    int64_t u = store->append_user_message(gone, "penguins to delete");
    {
        auto s = store->begin_assistant_message(gone, "m");
        s.append("penguin answer");
        s.finish();
    }
    store->edit_message(u, "edited penguins");  // a second branch
    store->delete_conversation(gone);
    EXPECT_THROW(store->conversation(gone), tandem::Error);
    EXPECT_EQ(sql_one(store->path(), "SELECT count(*) FROM messages"), "1");
    auto hits = store->search("penguins");
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].conversation_id, keep);
    EXPECT_EQ(store->integrity_check(), "ok");
    EXPECT_EQ(sql_one(store->path(), "PRAGMA foreign_key_check"), "<no row>");
}

TEST(StoreConversations, DefaultPathFollowsTheEnvironment) {
    // Saved and restored: other tests of this process must not see the changes.
    auto saved = [](const char* n) {
        const char* v = std::getenv(n);
        return v ? std::optional<std::string>(v) : std::nullopt;
    };
    auto restore = [](const char* n, const std::optional<std::string>& v) {
        if (v)
            setenv(n, v->c_str(), 1);
        else
            unsetenv(n);
    };
    auto db = saved("TANDEM_CHATS_DB"), home = saved("TANDEM_HOME"), xdg = saved("XDG_DATA_HOME"),
         user = saved("HOME");
    unsetenv("TANDEM_CHATS_DB");
    unsetenv("TANDEM_HOME");
    unsetenv("XDG_DATA_HOME");
    setenv("HOME", "/home/someone", 1);
    EXPECT_EQ(ChatStore::default_path(), "/home/someone/.local/share/tandem/chats.db");
    setenv("XDG_DATA_HOME", "/data", 1);
    EXPECT_EQ(ChatStore::default_path(), "/data/tandem/chats.db");
    setenv("TANDEM_HOME", "/opt/tandem", 1);
    EXPECT_EQ(ChatStore::default_path(), "/opt/tandem/chats.db");
    setenv("TANDEM_CHATS_DB", "/tmp/x.db", 1);
    EXPECT_EQ(ChatStore::default_path(), "/tmp/x.db");
    restore("TANDEM_CHATS_DB", db);
    restore("TANDEM_HOME", home);
    restore("XDG_DATA_HOME", xdg);
    restore("HOME", user);
}
