#include "thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TANDEM_PAUSE() _mm_pause()
#else
#define TANDEM_PAUSE() ((void)0)
#endif

namespace tandem::cpu {

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
        generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
}

void ThreadPool::work(int thread_index) {
    for (;;) {
        int64_t t = next_task_.fetch_add(1, std::memory_order_relaxed);
        if (t >= n_tasks_) break;
        (*fn_)(t, thread_index);
    }
}

void ThreadPool::run(int64_t n_tasks, TaskRef fn) {
    if (n_tasks <= 0) return;
    if (n_threads_ == 1 || n_tasks == 1) {
        for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        fn_ = &fn;
        n_tasks_ = n_tasks;
        next_task_.store(0);
        busy_.store(n_threads_ - 1);
        generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    work(0);
    // Spin briefly, then yield: on a loaded machine a descheduled worker needs our core.
    for (int spins = 0; busy_.load(std::memory_order_acquire) != 0; ++spins) {
        if (spins < 2000)
            TANDEM_PAUSE();
        else
            std::this_thread::yield();
    }
}

void ThreadPool::worker(int index) {
    uint64_t seen = 0;
    for (;;) {
        // Spin a little (~100 us): the next job of a decode step usually comes within microseconds.
        for (int spins = 0; spins < 20000 && generation_.load(std::memory_order_acquire) == seen;
             ++spins)
            TANDEM_PAUSE();
        if (generation_.load(std::memory_order_acquire) == seen) {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] { return generation_.load() != seen; });
        }
        {
            // Read the job under the lock so run() cannot be setting it up halfway.
            std::lock_guard<std::mutex> lock(mu_);
            seen = generation_.load();
            if (stop_) return;
        }
        work(index);
        busy_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

}  // namespace tandem::cpu
