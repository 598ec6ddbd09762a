#pragma once
// Overlapped launches of a step's dependent kernels (NVIDIA sm_90+, through the CUDA path).
//
// A decode step is ~230 launches that each depend on the one before; between two of them the
// GPU drains the first grid, then launches and ramps up the next (~1 us a node in a CUDA graph
// on an H200, more with the ramp; overlapping them gained 4-7 % of 8B decode, docs/hip.md).
// With programmatic dependent launch the next grid is launched while
// the one before still runs: its blocks take the SM slots the last wave frees, may start the
// loads that do not depend on the step (the weights: grid_prefetch_l2, where that pays) and
// wait in grid_wait() until the grid before has finished and its writes are visible.
//
// The contract of a kernel launched by TANDEM_LAUNCH_OVERLAPPED: it calls grid_wait() before it
// reads anything an earlier launch wrote or writes anything an earlier launch reads (every
// thread, before any return), and calls grid_launch_dependents() after it. Kernels launched the
// plain way are unaffected. AMD GPUs have no such launch: there the macro is hipLaunchKernelGGL
// and the device calls are empty. `TANDEM_HIP_OVERLAP=0` launches everything the plain way.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace tandem::hip {

#if defined(TANDEM_HIP_ON_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TANDEM_GRID_DEPENDENCY 1
#endif

// Waits until the grids this one depends on have completed and their writes are visible.
__device__ inline void grid_wait() {
#if defined(TANDEM_GRID_DEPENDENCY)
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next overlapped launch start once every block of this grid has called it (or ended).
__device__ inline void grid_launch_dependents() {
#if defined(TANDEM_GRID_DEPENDENCY)
    asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

constexpr int kPrefetchLine = 128;  // bytes per L2 prefetch

// Asks L2 for `bytes` from p, line k by thread k % n_threads: weights a block reads after its
// grid_wait() arrive while the grid before it finishes.
__device__ inline void grid_prefetch_l2(const void* p, int64_t bytes, int tid, int n_threads) {
#if defined(TANDEM_GRID_DEPENDENCY)
    const auto* b = static_cast<const uint8_t*>(p);
    for (int64_t o = int64_t(tid) * kPrefetchLine; o < bytes;
         o += int64_t(n_threads) * kPrefetchLine)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(b + o));
#else
    (void)p, (void)bytes, (void)tid, (void)n_threads;
#endif
}

// Read at every launch (like TANDEM_HIP_Q8_ROWS), so one process can compare the two ways.
inline bool overlap_launches() {
    const char* v = std::getenv("TANDEM_HIP_OVERLAP");
    return !(v && std::strcmp(v, "0") == 0);
}

#if defined(TANDEM_HIP_ON_CUDA)
template <class... KArgs, class... Args>
void launch_overlapped(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t shared,
                       cudaStream_t s, Args&&... args) {
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = shared;
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = overlap_launches() ? 1 : 0;
    // An error stays the runtime's last error, read where the step's launches are checked.
    (void)cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}
#define TANDEM_LAUNCH_OVERLAPPED(k, g, b, sh, st, ...) \
    ::tandem::hip::launch_overlapped(k, g, b, sh, st, __VA_ARGS__)
#else
#define TANDEM_LAUNCH_OVERLAPPED(k, g, b, sh, st, ...) \
    hipLaunchKernelGGL(k, g, b, sh, st, __VA_ARGS__)
#endif

}  // namespace tandem::hip
