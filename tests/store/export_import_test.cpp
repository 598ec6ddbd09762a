// Export (JSON, Markdown) and import: a hand-written export file, exact Markdown, round trip,
// and all-or-nothing rejection of malformed documents.
#include <gtest/gtest.h>

#include <map>

#include "store_test_util.h"
#include "tandem/common/error.h"
#include "tandem/store/chat_export.h"

using namespace tandem::store;
using nlohmann::json;
using tandem::test::sql_one;

namespace {

json sample() {
    return json::parse(tandem::test::file_bytes(tandem::test::store_data("sample_export.json")));
}

// Replaces ids by their position so two exports of the same content compare equal.
json normalized(json doc) {
    for (auto& c : doc["conversations"]) {
        std::map<int64_t, int64_t> pos;
        for (size_t i = 0; i < c["messages"].size(); ++i)
            pos[c["messages"][i]["id"].get<int64_t>()] = int64_t(i);
        auto map_id = [&](json& v) {
            if (!v.is_null()) v = pos.at(v.get<int64_t>());
        };
        c.erase("id");
        map_id(c["selected_root_id"]);
        for (auto& m : c["messages"]) {
            map_id(m["id"]);
            map_id(m["parent_id"]);
            map_id(m["selected_child_id"]);
        }
    }
    return doc;
}

}  // namespace

TEST(StoreExport, ImportOfAHandWrittenExportLandsInTheDatabase) {
    auto store = tandem::test::fresh_store("imp-sample");
    auto ids = import_json(*store, sample());
    ASSERT_EQ(ids.size(), 2u);
    Conversation c = store->conversation(ids[0]);
    EXPECT_EQ(c.title, "Sourdough starter");
    EXPECT_TRUE(c.pinned);
    EXPECT_EQ(c.created_at_ms, 1767225600000);
    EXPECT_EQ(c.message_count, 5);
    EXPECT_TRUE(store->conversation(ids[1]).archived);
    auto path = store->active_path(ids[0]);
    ASSERT_EQ(path.size(), 4u);
    EXPECT_EQ(path[1].content,
              "Feed it **every 12 hours** at room temperature, weekly if refrigerated.");
    EXPECT_EQ(path[1].sibling_index, 1);
    EXPECT_EQ(path[3].status, MessageStatus::Interrupted);
    EXPECT_EQ(path[3].prompt_tokens, 60);
    EXPECT_EQ(
        sql_one(store->path(),
                "SELECT role, completion_tokens, tokens_per_second, finish_reason, created_at "
                "FROM messages WHERE content LIKE 'Feed it%'"),
        "assistant|18|36.25|stop|1767225620000");
    // Search finds imported text (the index is filled by the same triggers).
    auto hits = store->search("grüß");
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].conversation_id, ids[1]);
}

TEST(StoreExport, MarkdownOfTheActivePath) {
    auto store = tandem::test::fresh_store("exp-md");
    auto ids = import_json(*store, sample());
    EXPECT_EQ(export_markdown(*store, ids[0]),
              tandem::test::file_bytes(tandem::test::store_data("sample_export_10.md")));
}

TEST(StoreExport, JsonOfAnImportIsTheDocumentWithNewIds) {
    auto store = tandem::test::fresh_store("exp-json");
    auto ids = import_json(*store, sample());
    json out = export_json(*store, ids);
    EXPECT_EQ(out["format"], "tandem-chats");
    EXPECT_EQ(normalized(out), normalized(sample()));
    EXPECT_EQ(export_all_json(*store), out);
    EXPECT_THROW(export_json(*store, {12345}), tandem::Error);
}

TEST(StoreExport, RoundTripOfEverythingTheApiCanMake) {
    ChatStore::Options o;
    o.stream_flush_interval = std::chrono::milliseconds(0);
    auto a = tandem::test::fresh_store("rt-a", o);
    NewConversation nc{
        "Round trip ✓", "model-x", "sys \"prompt\"", {{"temperature", 0.2}, {"seed", 7}}};
    int64_t c = a->create_conversation(nc);
    a->append_message(c, Role::System, "system text");
    int64_t u = a->append_user_message(c, "question\nwith lines 日本語");
    auto s = a->begin_assistant_message(c, "model-x");
    s.append("answer");
    s.finish({"stop", 10, 1, 12.5});
    auto r = a->begin_assistant_message(c, "model-y", u);
    r.append("regenerated, cut");
    r.interrupt();
    a->edit_message(u, "edited question");
    a->select_branch(s.id());
    int64_t c2 = a->create_conversation({"empty and archived"});
    a->set_archived(c2, true);
    a->set_pinned(c, true);

    json first = export_all_json(*a);
    auto b = tandem::test::fresh_store("rt-b");
    auto ids = import_json(*b, first);
    ASSERT_EQ(ids.size(), 2u);
    json second = export_all_json(*b);
    EXPECT_EQ(normalized(second), normalized(first));
    // The same conversation through the public API, on both sides.
    auto pa = a->active_path(c), pb = b->active_path(ids[0]);
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i) {
        EXPECT_EQ(pa[i].content, pb[i].content);
        EXPECT_EQ(pa[i].sibling_index, pb[i].sibling_index);
        EXPECT_EQ(pa[i].sibling_count, pb[i].sibling_count);
    }
    EXPECT_EQ(export_markdown(*a, c), export_markdown(*b, ids[0]));
    // Importing twice adds copies, it never merges into existing conversations.
    import_json(*b, first);
    EXPECT_EQ(b->list_conversations(true).size(), 4u);
}

TEST(StoreExport, MalformedImportsNameTheFieldAndAddNothing) {
    auto store = tandem::test::fresh_store("imp-bad");
    import_json(*store, sample());
    struct Case {
        const char* what;
        std::function<void(json&)> spoil;
        const char* expected;
    };
    std::vector<Case> cases = {
        {"not an object", [](json& d) { d = json::array(); }, "document: expected an object"},
        {"other format", [](json& d) { d["format"] = "gpt4all"; },
         "format: 'gpt4all' is not a Tandem chat export"},
        {"newer version", [](json& d) { d["version"] = 9; }, "version: 9 is not supported"},
        {"no title", [](json& d) { d["conversations"][1].erase("title"); },
         "conversations[1].title: missing"},
        {"bad role", [](json& d) { d["conversations"][0]["messages"][2]["role"] = "wizard"; },
         "conversations[0].messages[2].role: "},
        {"dangling parent",
         [](json& d) { d["conversations"][0]["messages"][3]["parent_id"] = 555; },
         "conversations[0].messages[3].parent_id: 555 is not an earlier message"},
        {"child before parent",
         [](json& d) {
             std::swap(d["conversations"][0]["messages"][0], d["conversations"][0]["messages"][1]);
         },
         "conversations[0].messages[0].parent_id: 100 is not an earlier message"},
        {"duplicate id", [](json& d) { d["conversations"][0]["messages"][4]["id"] = 101; },
         "conversations[0].messages[4].id: duplicate id 101"},
        {"selected non-child",
         [](json& d) { d["conversations"][0]["messages"][0]["selected_child_id"] = 104; },
         "conversations[0].messages[0].selected_child_id: 104 is not a child of message 100"},
        {"root not a root", [](json& d) { d["conversations"][0]["selected_root_id"] = 102; },
         "conversations[0].selected_root_id: 102 is not a first message"},
        {"content not text", [](json& d) { d["conversations"][1]["messages"][0]["content"] = 5; },
         "conversations[1].messages[0].content: expected a string, got number"},
        {"bad status", [](json& d) { d["conversations"][1]["messages"][1]["status"] = "done"; },
         "conversations[1].messages[1].status: "},
        {"sampling array", [](json& d) { d["conversations"][0]["sampling"] = json::array(); },
         "conversations[0].sampling: expected an object"},
    };
    for (auto& tc : cases) {
        json doc = sample();
        tc.spoil(doc);
        try {
            import_json(*store, doc);
            ADD_FAILURE() << tc.what << ": no error";
        } catch (const tandem::Error& e) {
            EXPECT_NE(std::string(e.what()).find(tc.expected), std::string::npos)
                << tc.what << ": " << e.what();
        }
        EXPECT_EQ(sql_one(store->path(), "SELECT count(*) FROM conversations"), "2") << tc.what;
        EXPECT_EQ(sql_one(store->path(), "SELECT count(*) FROM messages"), "7") << tc.what;
    }
}
