#pragma once
// A persistent pool for the CPU backend: run(n_tasks, fn) calls fn(task, thread) for every task
// across the workers and the caller, and returns when all are done. Workers spin briefly between
// jobs (a decode step dispatches hundreds of small jobs) and then sleep on a condition variable.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace tandem::cpu {

// A non-owning reference to a callable fn(task, thread): unlike std::function it never allocates,
// so dispatching a job costs nothing on the heap.
class TaskRef {
  public:
    template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, TaskRef>>>
    TaskRef(F&& f)  // NOLINT: implicit on purpose, callers pass lambdas
        : obj_(const_cast<void*>(static_cast<const void*>(&f))),
          call_([](void* o, int64_t task, int thread) {
              (*static_cast<std::remove_reference_t<F>*>(o))(task, thread);
          }) {}
    void operator()(int64_t task, int thread) const { call_(obj_, task, thread); }

  private:
    void* obj_;
    void (*call_)(void*, int64_t, int);
};

class ThreadPool {
  public:
    explicit ThreadPool(int n_threads);  // total threads including the caller (>= 1)
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }
    // fn(task, thread_index); tasks are claimed dynamically. Not reentrant.
    void run(int64_t n_tasks, TaskRef fn);  // fn must outlive the call (a lambda argument does)

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
    const TaskRef* fn_ = nullptr;
};

}  // namespace tandem::cpu
