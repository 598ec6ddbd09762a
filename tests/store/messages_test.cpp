// The message tree: appending, streaming, edits and regenerations as branches, switching.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "store_test_util.h"
#include "tandem/common/error.h"

using namespace tandem::store;
using tandem::test::sql_one;

namespace {
std::vector<std::string> contents(const std::vector<Message>& path) {
    std::vector<std::string> out;
    for (auto& m : path) out.push_back(m.content);
    return out;
}
using Strings = std::vector<std::string>;
}  // namespace

TEST(StoreMessages, AppendBuildsTheActivePathInOrder) {
    auto store = tandem::test::fresh_store("msg-append");
    int64_t c = store->create_conversation({"t"});
    EXPECT_TRUE(store->active_path(c).empty());
    int64_t s = store->append_message(c, Role::System, "sys");
    int64_t u = store->append_user_message(c, "hello");
    auto path = store->active_path(c);
    ASSERT_EQ(path.size(), 2u);
    EXPECT_EQ(path[0].id, s);
    EXPECT_EQ(path[0].role, Role::System);
    EXPECT_FALSE(path[0].parent_id.has_value());
    EXPECT_EQ(path[1].id, u);
    EXPECT_EQ(path[1].parent_id, s);
    EXPECT_EQ(path[1].role, Role::User);
    EXPECT_EQ(path[1].status, MessageStatus::Complete);
    EXPECT_EQ(path[1].sibling_count, 1);
    // The tree as stored: parent links and the selected child, read with plain SQL.
    EXPECT_EQ(
        sql_one(store->path(), "SELECT parent_id, selected_child_id FROM messages WHERE id = " +
                                   std::to_string(s)),
        "NULL|" + std::to_string(u));
    EXPECT_EQ(sql_one(store->path(), "SELECT selected_root_id FROM conversations"),
              std::to_string(s));
}

TEST(StoreMessages, StreamIsSavedAtStartInIntervalsAndAtFinish) {
    ChatStore::Options o;
    o.stream_flush_interval = std::chrono::milliseconds(40);
    auto store = tandem::test::fresh_store("msg-stream", o);
    int64_t c = store->create_conversation({"t"});
    store->append_user_message(c, "count");
    auto stream = store->begin_assistant_message(c, "tiny-model");
    const std::string q =
        "SELECT content, status FROM messages WHERE id = " + std::to_string(stream.id());
    EXPECT_EQ(sql_one(store->path(), q), "|streaming");  // exists before the first token
    EXPECT_FALSE(stream.append("one"));                  // inside the interval: memory only
    EXPECT_EQ(sql_one(store->path(), q), "|streaming");
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    EXPECT_TRUE(stream.append(" two"));  // interval passed: committed
    EXPECT_EQ(sql_one(store->path(), q), "one two|streaming");
    stream.append(" three");
    stream.flush();
    EXPECT_EQ(sql_one(store->path(), q), "one two three|streaming");
    EXPECT_EQ(store->message(stream.id()).status, MessageStatus::Streaming);
    FinishInfo info;
    info.finish_reason = "length";
    info.prompt_tokens = 12;
    info.completion_tokens = 3;
    info.tokens_per_second = 41.5;
    stream.finish(info);
    EXPECT_FALSE(stream.open());
    EXPECT_THROW(stream.append("more"), tandem::Error);
    Message m = store->message(stream.id());
    EXPECT_EQ(m.content, "one two three");
    EXPECT_EQ(m.status, MessageStatus::Complete);
    EXPECT_EQ(m.finish_reason, "length");
    EXPECT_EQ(m.model, "tiny-model");
    EXPECT_EQ(m.prompt_tokens, 12);
    EXPECT_EQ(m.completion_tokens, 3);
    EXPECT_DOUBLE_EQ(*m.tokens_per_second, 41.5);
    ASSERT_TRUE(m.finished_at_ms.has_value());
    EXPECT_GE(*m.finished_at_ms, m.created_at_ms);
    EXPECT_EQ(sql_one(store->path(),
                      "SELECT status, finish_reason, prompt_tokens, completion_tokens, "
                      "tokens_per_second FROM messages WHERE id = " +
                          std::to_string(m.id)),
              "complete|length|12|3|41.5");
}

TEST(StoreMessages, AbandonedStreamKeepsItsTextMarkedInterrupted) {
    ChatStore::Options o;
    o.stream_flush_interval = std::chrono::hours(1);  // nothing committed before the end
    auto store = tandem::test::fresh_store("msg-interrupt", o);
    int64_t c = store->create_conversation({"t"});
    int64_t id = 0;
    try {
        auto stream = store->begin_assistant_message(c, "m");
        id = stream.id();
        stream.append("partial answ");
        throw std::runtime_error("generation failed");
    } catch (const std::runtime_error&) {
    }
    Message m = store->message(id);
    EXPECT_EQ(m.content, "partial answ");
    EXPECT_EQ(m.status, MessageStatus::Interrupted);
    EXPECT_EQ(m.finish_reason, "interrupted");

    auto s2 = store->begin_assistant_message(c, "m");
    s2.append("stopped by user");
    s2.interrupt("cancelled");
    EXPECT_EQ(store->message(s2.id()).status, MessageStatus::Interrupted);
    EXPECT_EQ(store->message(s2.id()).finish_reason, "cancelled");
    EXPECT_EQ(store->message(s2.id()).content, "stopped by user");
}

TEST(StoreMessages, RecoverMarksStreamsOfADeadProcessInterrupted) {
    auto dir = tandem::test::temp_dir("msg-recover");
    // A child process starts a reply, commits some text and dies without finishing it.
    pid_t pid = fork();
    if (pid == 0) {
        auto store = ChatStore::open(dir / "c.db");
        int64_t c = store->create_conversation({"t"});
        auto stream = store->begin_assistant_message(c, "m");
        stream.append("half");
        stream.flush();
        std::_Exit(0);  // no destructors: the stream is never finished or interrupted
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    auto store = ChatStore::open(dir / "c.db");
    auto path = store->active_path(1);
    ASSERT_EQ(path.size(), 1u);
    int64_t id = path[0].id;
    EXPECT_EQ(store->message(id).status, MessageStatus::Streaming);
    EXPECT_EQ(store->recover_interrupted(), 1);
    EXPECT_EQ(store->message(id).status, MessageStatus::Interrupted);
    EXPECT_EQ(store->message(id).finish_reason, "interrupted");
    EXPECT_EQ(store->message(id).content, "half");
    EXPECT_EQ(store->recover_interrupted(), 0);
}

TEST(StoreMessages, RegenerateAndEditCreateBranchesTheUiCanSwitch) {
    auto store = tandem::test::fresh_store("msg-branch");
    int64_t c = store->create_conversation({"t"});
    int64_t u1 = store->append_user_message(c, "Q1");
    auto a1 = store->begin_assistant_message(c, "m");
    a1.append("A1");
    a1.finish();
    int64_t u2 = store->append_user_message(c, "Q2");
    auto a2 = store->begin_assistant_message(c, "m");
    a2.append("A2");
    a2.finish();
    EXPECT_EQ(contents(store->active_path(c)), (Strings{"Q1", "A1", "Q2", "A2"}));

    // Regenerate A1: a sibling under Q1; the path now ends at the new reply.
    auto a1b = store->begin_assistant_message(c, "m", u1);
    a1b.append("A1 again");
    a1b.finish();
    auto path = store->active_path(c);
    EXPECT_EQ(contents(path), (Strings{"Q1", "A1 again"}));
    EXPECT_EQ(path[1].sibling_index, 1);
    EXPECT_EQ(path[1].sibling_count, 2);

    // Switch back to the first reply: its subtree (Q2, A2) comes back as it was.
    store->select_branch(a1.id());
    path = store->active_path(c);
    EXPECT_EQ(contents(path), (Strings{"Q1", "A1", "Q2", "A2"}));
    EXPECT_EQ(path[1].sibling_index, 0);
    EXPECT_EQ(path[1].sibling_count, 2);

    // Edit Q2: a sibling user message, selected, with no reply yet.
    int64_t u2b = store->edit_message(u2, "Q2 edited");
    EXPECT_EQ(contents(store->active_path(c)), (Strings{"Q1", "A1", "Q2 edited"}));
    auto sib = store->siblings(u2);
    ASSERT_EQ(sib.size(), 2u);
    EXPECT_EQ(sib[0].id, u2);
    EXPECT_EQ(sib[1].id, u2b);
    EXPECT_EQ(store->message(u2b).parent_id, a1.id());

    // Editing the first message makes a second root.
    int64_t u1b = store->edit_message(u1, "Q1 edited");
    EXPECT_EQ(contents(store->active_path(c)), (Strings{"Q1 edited"}));
    EXPECT_FALSE(store->message(u1b).parent_id.has_value());
    EXPECT_EQ(store->active_path(c)[0].sibling_count, 2);

    // Selecting a message deep in an unselected branch (a search hit) selects its ancestors.
    store->select_branch(a2.id());
    EXPECT_EQ(contents(store->active_path(c)), (Strings{"Q1", "A1", "Q2", "A2"}));
    EXPECT_EQ(store->all_messages(c).size(), 7u);
    EXPECT_EQ(store->conversation(c).message_count, 7);

    // Switching is one UPDATE of the parent's selected child: check it in the file.
    store->select_branch(u2b);
    EXPECT_EQ(sql_one(store->path(), "SELECT selected_child_id FROM messages WHERE id = " +
                                         std::to_string(a1.id())),
              std::to_string(u2b));
}

TEST(StoreMessages, ParentMustBelongToTheConversation) {
    auto store = tandem::test::fresh_store("msg-parent");
    int64_t c1 = store->create_conversation({"one"});
    int64_t c2 = store->create_conversation({"two"});
    int64_t u = store->append_user_message(c1, "hi");
    EXPECT_THROW(store->begin_assistant_message(c2, "m", u), tandem::Error);
    EXPECT_THROW(store->begin_assistant_message(c2, "m", 999), tandem::Error);
    EXPECT_THROW(store->edit_message(999, "x"), tandem::Error);
    EXPECT_THROW(store->select_branch(999), tandem::Error);
    EXPECT_THROW(store->message(999), tandem::Error);
    EXPECT_EQ(sql_one(store->path(), "SELECT count(*) FROM messages"), "1");
}

TEST(StoreMessages, TextIsStoredExactly) {
    auto store = tandem::test::fresh_store("msg-bytes");
    int64_t c = store->create_conversation({"t"});
    const std::string text = std::string("line 1\nline 2\t\"quoted\" 'single' ü 日本語 🚀 ") +
                             std::string(1, '\0') + "after NUL";
    int64_t id = store->append_user_message(c, text);
    EXPECT_EQ(store->message(id).content, text);
    EXPECT_EQ(sql_one(store->path(), "SELECT length(CAST(content AS BLOB)) FROM messages"),
              std::to_string(text.size()));
}

TEST(StoreMessages, DeletingTheConversationWhileStreamingIsNotACrash) {
    auto store = tandem::test::fresh_store("msg-del-stream");
    int64_t c = store->create_conversation({"t"});
    auto s = store->begin_assistant_message(c, "m");
    s.append("x");
    store->delete_conversation(c);
    EXPECT_THROW(s.flush(), tandem::Error);
    EXPECT_NO_THROW(s.finish());  // nothing left to save; logged
    EXPECT_EQ(sql_one(store->path(), "SELECT count(*) FROM messages"), "0");
}

TEST(StoreMessages, RegeneratingInAnUnselectedBranchSelectsThatBranch) {
    auto store = tandem::test::fresh_store("msg-regen-old");
    int64_t c = store->create_conversation({"t"});
    int64_t q1 = store->append_user_message(c, "Q1");
    store->append_message(c, Role::Assistant, "A1");
    int64_t q1b = store->edit_message(q1, "Q1 edited");  // the path is now just "Q1 edited"
    ASSERT_EQ(contents(store->active_path(c)), (Strings{"Q1 edited"}));
    auto again = store->begin_assistant_message(c, "m", q1);  // regenerate A1 under the old Q1
    again.append("A1 regenerated");
    again.finish();
    EXPECT_EQ(contents(store->active_path(c)), (Strings{"Q1", "A1 regenerated"}));
    store->select_branch(q1b);
    EXPECT_EQ(contents(store->active_path(c)), (Strings{"Q1 edited"}));
}
