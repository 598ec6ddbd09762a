// The CPU backend's thread pool: every task of every job runs exactly once, with the right
// thread indices, whether jobs come back to back (workers spinning), after a pause (workers
// asleep) or from a pool larger than the machine (workers routinely late for a job).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

// Internal header of the CPU backend (not part of the public include tree).
#include "../../core/src/backend/cpu/thread_pool.h"

namespace {

using tandem::cpu::ThreadPool;

// Runs `jobs` jobs of varying sizes and checks each task ran once and saw a valid thread index.
void run_jobs(ThreadPool& pool, int jobs, std::chrono::microseconds pause) {
    std::vector<std::atomic<int>> hits(257);
    for (int j = 0; j < jobs; ++j) {
        const int64_t n = 1 + (j * 37) % 257;
        for (int64_t t = 0; t < n; ++t) hits[static_cast<size_t>(t)] = 0;
        std::atomic<int> bad_thread{0};
        pool.run(n, [&](int64_t task, int thread) {
            if (thread < 0 || thread >= pool.size()) bad_thread = 1;
            hits[static_cast<size_t>(task)].fetch_add(1);
        });
        // run() returned: every task has finished (no late increments may follow).
        for (int64_t t = 0; t < n; ++t)
            ASSERT_EQ(hits[static_cast<size_t>(t)].load(), 1) << "job " << j << " task " << t;
        ASSERT_EQ(bad_thread.load(), 0);
        if (pause.count() > 0) std::this_thread::sleep_for(pause);
    }
}

TEST(ThreadPool, BackToBackJobsRunEveryTaskOnce) {
    ThreadPool pool(2);
    run_jobs(pool, 3000, std::chrono::microseconds(0));
}

TEST(ThreadPool, JobsAfterWorkersFellAsleep) {
    ThreadPool pool(2);
    run_jobs(pool, 20, std::chrono::microseconds(3000));  // > the ~1 ms spin: cv wake-up path
}

TEST(ThreadPool, MoreThreadsThanCoresFinishJobsWithoutLateWorkers) {
    // Oversubscribed: some workers are not scheduled during a job; run() must not wait for them.
    ThreadPool pool(static_cast<int>(2 * std::max(1u, std::thread::hardware_concurrency()) + 3));
    run_jobs(pool, 2000, std::chrono::microseconds(0));
}

TEST(ThreadPool, WorkIsSharedAndOneThreadPoolRunsInline) {
    ThreadPool one(1);
    int calls = 0;
    one.run(5, [&](int64_t, int thread) {
        EXPECT_EQ(thread, 0);
        ++calls;
    });
    EXPECT_EQ(calls, 5);

    // With slow tasks, the worker takes part (thread index 1 appears).
    ThreadPool two(2);
    std::atomic<bool> worker_seen{false};
    for (int attempt = 0; attempt < 50 && !worker_seen; ++attempt)
        two.run(8, [&](int64_t, int thread) {
            if (thread == 1) worker_seen = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        });
    EXPECT_TRUE(worker_seen.load());
}

TEST(ThreadPool, DestroyWhileWorkersSleepOrSpin) {
    for (int i = 0; i < 20; ++i) {
        ThreadPool pool(3);
        pool.run(10, [](int64_t, int) {});
        if (i % 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }  // the destructor must wake and join them (a hang fails by the ctest timeout)
}

}  // namespace
