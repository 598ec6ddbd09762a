#pragma once
// Splits [0, n) into contiguous chunks of at least `grain` items, a few per thread.
#include <algorithm>
#include <cstdint>

#include "thread_pool.h"

namespace tandem::cpu {

template <typename Fn>  // fn(begin, end, thread)
void parallel_ranges(ThreadPool& pool, int64_t n, int64_t grain, Fn&& fn) {
    if (n <= 0) return;
    int64_t chunks = std::min<int64_t>(n / std::max<int64_t>(grain, 1), pool.size() * 4);
    if (chunks <= 1) {
        fn(int64_t{0}, n, 0);
        return;
    }
    const int64_t per = (n + chunks - 1) / chunks;
    chunks = (n + per - 1) / per;
    pool.run(chunks,
             [&](int64_t c, int thread) { fn(c * per, std::min(n, (c + 1) * per), thread); });
}

}  // namespace tandem::cpu
