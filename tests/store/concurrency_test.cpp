// Several threads at once: the UI reads while a generation writes; two stores (two processes'
// worth of connections) write the same file.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "store_test_util.h"

using namespace tandem::store;

TEST(StoreConcurrency, ReadersSeeCommittedTextGrowWhileAGenerationWrites) {
    ChatStore::Options o;
    o.stream_flush_interval = std::chrono::milliseconds(0);
    auto store = tandem::test::fresh_store("conc-stream", o);
    int64_t c = store->create_conversation({"t"});
    store->append_user_message(c, "go");
    auto stream = store->begin_assistant_message(c, "m");
    const int64_t id = stream.id();
    constexpr int kPieces = 120;
    std::atomic<bool> done{false};
    std::atomic<int> reads{0}, errors{0}, regressions{0};
    auto reader = [&] {
        size_t last = 0;
        while (!done) {
            try {
                auto path = store->active_path(c);
                size_t len = path.size() == 2 ? path[1].content.size() : 0;
                if (len < last) ++regressions;
                last = len;
                store->search("tok");
                store->list_conversations();
                ++reads;
            } catch (const std::exception& e) {
                ADD_FAILURE() << e.what();
                ++errors;
            }
        }
    };
    std::thread r1(reader), r2(reader);
    for (int i = 0; i < kPieces; ++i) stream.append("tok ");
    stream.finish();
    done = true;
    r1.join();
    r2.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(regressions.load(), 0);
    EXPECT_GT(reads.load(), 10);
    EXPECT_EQ(store->message(id).content.size(), size_t(4 * kPieces));
}

TEST(StoreConcurrency, TwoStoresOnOneFileBothCommitEverything) {
    auto dir = tandem::test::temp_dir("conc-two");
    auto a = ChatStore::open(dir / "c.db");
    auto b = ChatStore::open(dir / "c.db");
    int64_t c = a->create_conversation({"shared"});
    constexpr int kEach = 40;
    auto writer = [&](ChatStore& s, const std::string& tag) {
        for (int i = 0; i < kEach; ++i) {
            int64_t conv = s.create_conversation({tag + std::to_string(i)});
            s.append_user_message(conv, tag);
            s.append_user_message(c, tag + " in shared");
        }
    };
    std::thread ta(writer, std::ref(*a), "a"), tb(writer, std::ref(*b), "b");
    ta.join();
    tb.join();
    EXPECT_EQ(a->list_conversations().size(), size_t(1 + 2 * kEach));
    // The shared conversation is one unbroken chain: every append found the other's last one.
    auto path = b->active_path(c);
    EXPECT_EQ(path.size(), size_t(2 * kEach));
    EXPECT_EQ(a->all_messages(c).size(), size_t(2 * kEach));
    EXPECT_EQ(a->integrity_check(), "ok");
}
