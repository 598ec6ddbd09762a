#pragma once
// A persistent pool for the CPU backend: run(n_tasks, fn) calls fn(task, thread) for every task
// across the workers and the caller, and returns when all are done. Workers spin briefly between
// jobs (a decode step dispatches hundreds of small jobs), then yield, then sleep on a condition
// variable.
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
    // fn(task, thread_index); tasks are claimed dynamically. Not reentrant. Returns when every
    // task has run, whether or not every worker took part: on a loaded machine a worker that is
    // not scheduled in time simply misses the job instead of holding it up.
    void run(int64_t n_tasks, TaskRef fn);  // fn must outlive the call (a lambda argument does)

  private:
    void worker(int index);
    void work(uint32_t gen, int thread_index);
    void wait_for_job(uint32_t seen);

    int n_threads_;
    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::condition_variable cv_;
    // Job generation (high 32 bits) and next unclaimed task (low 32 bits). Claiming a task is a
    // compare-exchange on both, so a worker that wakes late can never take a task of a newer job
    // while believing it belongs to the old one.
    std::atomic<uint64_t> claim_{0};
    std::atomic<int64_t> done_{0};  // tasks of the current job finished
    std::atomic<int> sleepers_{0};  // workers blocked on cv_ (run() notifies only then)
    std::atomic<bool> stop_{false};
    uint32_t gen_ = 0;  // caller side: generation of the last job
    // Job g lives in slot g % 2, written before g is published. It is rewritten only for job
    // g + 2, after job g + 1 was published, so a late worker that reads a rewritten slot for g
    // fails its compare-exchange (the generation moved on) and discards what it read.
    struct Job {
        std::atomic<int64_t> n_tasks{0};
        std::atomic<const TaskRef*> fn{nullptr};
    };
    Job jobs_[2];
};

}  // namespace tandem::cpu
