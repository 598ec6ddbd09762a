#pragma once
// ChatStore for a UI thread: calls run on background threads and answer through std::future
// (or a callback the UI marshals back to its own thread), so the UI never waits on disk I/O or on
// another process's lock. Reads and writes have separate threads, so a list refresh is never
// queued behind a slow write.
//
//   auto titles = async.read([](ChatStore& s) { return s.list_conversations(); });
//   async.write([=](ChatStore& s) { s.rename_conversation(id, title); },
//               [](std::exception_ptr e) { /* report */ });
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>

#include "tandem/store/chat_store.h"

namespace tandem::store {

// One background thread running queued jobs in order.
class StoreWorker {
  public:
    StoreWorker();
    // Runs the jobs already queued, then joins.
    ~StoreWorker();
    StoreWorker(const StoreWorker&) = delete;
    StoreWorker& operator=(const StoreWorker&) = delete;
    void post(std::function<void()> job);

  private:
    void loop();
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> jobs_;
    bool stopping_ = false;
    std::thread thread_;
};

class AsyncChatStore {
  public:
    explicit AsyncChatStore(std::shared_ptr<ChatStore> store) : store_(std::move(store)) {}

    ChatStore& store() { return *store_; }

    template <class F>
    auto read(F fn) -> std::future<std::invoke_result_t<F, ChatStore&>> {
        return submit(reader_, std::move(fn));
    }
    template <class F>
    auto write(F fn) -> std::future<std::invoke_result_t<F, ChatStore&>> {
        return submit(writer_, std::move(fn));
    }
    // Fire and forget with a completion callback (called on the worker thread; nullptr = ok).
    template <class F>
    void write(F fn, std::function<void(std::exception_ptr)> done) {
        writer_.post([store = store_, fn = std::move(fn), done = std::move(done)]() mutable {
            std::exception_ptr error;
            try {
                fn(*store);
            } catch (...) {
                error = std::current_exception();
            }
            if (done) done(error);
        });
    }

  private:
    template <class F>
    auto submit(StoreWorker& worker, F fn) -> std::future<std::invoke_result_t<F, ChatStore&>> {
        using R = std::invoke_result_t<F, ChatStore&>;
        auto task = std::make_shared<std::packaged_task<R()>>(
            [store = store_, fn = std::move(fn)]() mutable { return fn(*store); });
        auto result = task->get_future();
        worker.post([task] { (*task)(); });
        return result;
    }

    std::shared_ptr<ChatStore> store_;
    // Declared after store_: destroyed (drained and joined) before the store goes.
    StoreWorker reader_;
    StoreWorker writer_;
};

}  // namespace tandem::store
