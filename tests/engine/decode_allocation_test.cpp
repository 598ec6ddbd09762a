// A decode step after warm-up allocates nothing on the heap (design goal: graphs, scratch, KV
// and kernel buffers are all prepared up front). Counted by replacing the global operator new.
#include <atomic>
#include <cstdlib>
#include <new>

#include "engine_fixture.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

// Replacing new/delete with malloc/free is what the standard allows; GCC cannot see that.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
    if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}

namespace tandem::test {
namespace {

TEST(DecodeAllocation, NoHeapAllocationPerToken) {
    for (const char* name : {"llama-tiny", "qwen3moe-tiny", "gemma3-tiny"}) {
        auto path = tiny_gguf(name);
        if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/" << name;
        auto e = make_engine(engine::load_model(*path), 64, DType::F16, 2);
        std::vector<int32_t> prompt = {1, 2, 3, 4, 5};
        std::vector<float> logits;
        e->decode(prompt, logits);
        int32_t id = 7;
        e->decode(std::span<const int32_t>(&id, 1), logits);  // warm-up: builds the decode graph
        g_allocations = 0;
        g_counting = true;
        for (int i = 0; i < 8; ++i) e->decode(std::span<const int32_t>(&id, 1), logits);
        g_counting = false;
        EXPECT_EQ(g_allocations.load(), 0) << name;
    }
}

}  // namespace
}  // namespace tandem::test
