#include "thread_pool.h"

#include <chrono>

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
        claim_.store(uint64_t(gen_ + 1) << 32);
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
}

void ThreadPool::work(uint32_t gen, int thread_index) {
    const Job& job = jobs_[gen & 1];
    uint64_t c = claim_.load(std::memory_order_acquire);
    for (;;) {
        if (uint32_t(c >> 32) != gen) return;  // a newer job: ours is finished
        const auto task = static_cast<int64_t>(c & 0xffffffffu);
        if (task >= job.n_tasks.load(std::memory_order_relaxed)) return;
        // Success proves the job is still `gen` (not finished: this task is not done), so the
        // slot still holds its function.
        if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel,
                                          std::memory_order_acquire))
            continue;
        (*job.fn.load(std::memory_order_relaxed))(task, thread_index);
        done_.fetch_add(1, std::memory_order_release);
        c = claim_.load(std::memory_order_acquire);
    }
}

void ThreadPool::run(int64_t n_tasks, TaskRef fn) {
    if (n_tasks <= 0) return;
    // (Task indices share a 64-bit word with the generation: 2^31 is far beyond any node.)
    if (n_threads_ == 1 || n_tasks == 1 || n_tasks > 0x7fffffff) {
        for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
        return;
    }
    const uint32_t gen = ++gen_;
    jobs_[gen & 1].fn.store(&fn, std::memory_order_relaxed);
    jobs_[gen & 1].n_tasks.store(n_tasks, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    claim_.store(uint64_t(gen) << 32, std::memory_order_seq_cst);  // publishes the slot
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
        // Taken so that a worker between its check and its wait cannot miss the notify.
        { std::lock_guard<std::mutex> lock(mu_); }
        cv_.notify_all();
    }
    work(gen, 0);
    // Spin briefly, then yield: on a loaded machine a descheduled worker needs our core.
    for (int spins = 0; done_.load(std::memory_order_acquire) != n_tasks; ++spins) {
        if (spins < 2000)
            TANDEM_PAUSE();
        else
            std::this_thread::yield();
    }
}

void ThreadPool::wait_for_job(uint32_t seen) {
    using Clock = std::chrono::steady_clock;
    auto current = [&] { return uint32_t(claim_.load(std::memory_order_acquire) >> 32); };
    // Three stages, bounded by time rather than by a count of pause instructions (whose latency
    // varies tenfold between CPU generations):
    //  - pause-spin ~20 us: the next node of a decode step usually comes within microseconds;
    //  - yield-spin up to ~1 ms: on a loaded machine the core goes to whoever is runnable (often
    //    our own caller, busy with its share) instead of being burnt here; on a quiet one
    //    sched_yield returns at once, so this is still a spin;
    //  - then sleep on the condition variable (between tokens, or when idle).
    // Pause-spinning for ~1 ms cost 24% of the CPU time of a 2-thread decode at a load average
    // of 20 (perf), time the caller needed.
    const auto t0 = Clock::now();
    for (int spins = 0; current() == seen; ++spins) {
        if ((spins & 63) == 63) {
            const auto waited = Clock::now() - t0;
            if (waited > std::chrono::milliseconds(1)) break;
            if (waited > std::chrono::microseconds(20)) {
                std::this_thread::yield();
                continue;
            }
        }
        TANDEM_PAUSE();
    }
    if (current() != seen) return;
    std::unique_lock<std::mutex> lock(mu_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    cv_.wait(lock, [&] { return uint32_t(claim_.load(std::memory_order_seq_cst) >> 32) != seen; });
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

void ThreadPool::worker(int index) {
    uint32_t seen = 0;
    for (;;) {
        wait_for_job(seen);
        if (stop_.load()) return;
        seen = uint32_t(claim_.load(std::memory_order_acquire) >> 32);
        work(seen, index);
    }
}

}  // namespace tandem::cpu
