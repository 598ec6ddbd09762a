// AsyncChatStore: a UI thread's calls return at once; reads are not queued behind writes;
// errors arrive through the future or the callback; queued writes are not dropped at shutdown.
#include <gtest/gtest.h>

#include <atomic>

#include "store_test_util.h"
#include "tandem/common/error.h"
#include "tandem/store/async_chat_store.h"

using namespace tandem::store;

TEST(StoreAsync, ReadsAnswerWhileAWriteIsStillRunning) {
    std::shared_ptr<ChatStore> store = tandem::test::fresh_store("async-read");
    int64_t c = store->create_conversation({"visible"});
    AsyncChatStore async(store);
    std::promise<void> release;
    auto gate = release.get_future().share();
    std::atomic<bool> write_started{false};
    auto slow = async.write([&](ChatStore& s) {
        write_started = true;
        gate.wait();  // a write that takes as long as the test wants
        return s.append_user_message(c, "late");
    });
    while (!write_started) std::this_thread::yield();
    auto list = async.read([](ChatStore& s) { return s.list_conversations(); });
    ASSERT_EQ(list.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_EQ(list.get().at(0).title, "visible");
    EXPECT_NE(slow.wait_for(std::chrono::milliseconds(0)), std::future_status::ready);
    release.set_value();
    int64_t id = slow.get();
    EXPECT_EQ(store->message(id).content, "late");
}

TEST(StoreAsync, ErrorsArriveThroughFutureAndCallback) {
    std::shared_ptr<ChatStore> store = tandem::test::fresh_store("async-err");
    AsyncChatStore async(store);
    auto f = async.read([](ChatStore& s) { return s.conversation(77); });
    EXPECT_THROW(f.get(), tandem::Error);
    std::promise<std::exception_ptr> got;
    async.write([](ChatStore& s) { s.rename_conversation(77, "x"); },
                [&](std::exception_ptr e) { got.set_value(e); });
    auto e = got.get_future().get();
    ASSERT_TRUE(e);
    EXPECT_THROW(std::rethrow_exception(e), tandem::Error);
}

TEST(StoreAsync, QueuedWritesRunBeforeShutdown) {
    auto dir = tandem::test::temp_dir("async-drain");
    {
        std::shared_ptr<ChatStore> store = ChatStore::open(dir / "c.db");
        AsyncChatStore async(store);
        int64_t c = store->create_conversation({"t"});
        for (int i = 0; i < 20; ++i)
            async.write([c, i](ChatStore& s) { s.append_user_message(c, std::to_string(i)); },
                        nullptr);
    }  // destroyed with writes still queued
    auto store = ChatStore::open(dir / "c.db");
    auto path = store->active_path(1);
    ASSERT_EQ(path.size(), 20u);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(path[size_t(i)].content, std::to_string(i));
}
