#include "tandem/store/async_chat_store.h"

namespace tandem::store {

StoreWorker::StoreWorker() : thread_([this] { loop(); }) {}

StoreWorker::~StoreWorker() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
}

void StoreWorker::post(std::function<void()> job) {
    {
        std::lock_guard lock(mu_);
        jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
}

void StoreWorker::loop() {
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) return;  // stopping, and everything queued has run
            job = std::move(jobs_.front());
            jobs_.pop_front();
        }
        job();  // jobs catch their own exceptions (packaged_task, or the callback wrapper)
    }
}

}  // namespace tandem::store
