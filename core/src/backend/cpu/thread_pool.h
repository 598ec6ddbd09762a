#pragma once
// A persistent pool for the CPU backend: run(n_tasks, fn) calls fn(task, thread) for every task
// across the workers and the caller, and returns when all are done. Workers spin briefly between
// jobs (a decode step dispatches hundreds of small jobs) and then sleep on a condition variable.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tandem::cpu {

class ThreadPool {
  public:
    explicit ThreadPool(int n_threads);  // total threads including the caller (>= 1)
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }
    // fn(task, thread_index); tasks are claimed dynamically. Not reentrant.
    void run(int64_t n_tasks, const std::function<void(int64_t, int)>& fn);

  private:
    void worker(int index);
    void work(int thread_index);

    int n_threads_;
    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int64_t> next_task_{0};
    std::atomic<int> busy_{0};
    std::atomic<bool> stop_{false};
    int64_t n_tasks_ = 0;
    const std::function<void(int64_t, int)>* fn_ = nullptr;
};

}  // namespace tandem::cpu
