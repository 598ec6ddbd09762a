// The measuring labs' shared pieces (matvec_lab.cu, layer_lab.cu): a checked CUDA call, and the
// device's copy rate, the yardstick `tandem-cli bench` uses (cudaMemcpy D2D, read + written),
// next to a read-only kernel's rate.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

// Plain read bandwidth: the xor of every 16-byte word (streaming loads).
__global__ void k_read(const uint4* p, int64_t n, unsigned* out) {
    unsigned s = 0;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        const uint4 v = __ldcs(p + i);
        s ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (s == 0x12345678u) out[0] = s;
}

struct Rates {
    double copy_gbs, read_gbs;
};

// 10 copies and 10 reads of 1 GiB after a warm-up of each; printed, and returned.
inline Rates measure_rates(int sms) {
    const size_t n = size_t(1) << 30;
    void *a, *b;
    unsigned* o;
    CK(cudaMalloc(&a, n));
    CK(cudaMalloc(&b, n));
    CK(cudaMalloc(&o, 4));
    CK(cudaMemset(a, 1, n));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto seconds = [&](auto&& run) {
        run();
        CK(cudaEventRecord(e0));
        for (int i = 0; i < 10; ++i) run();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        return ms * 1e-3;
    };
    Rates r;
    r.copy_gbs = 2.0 * n * 10 /
                 seconds([&] { CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice)); }) / 1e9;
    r.read_gbs =
        double(n) * 10 /
        seconds([&] { k_read<<<sms * 8, 512>>>(static_cast<const uint4*>(a), n / 16, o); }) / 1e9;
    printf("copy (D2D, read + written): %.0f GB/s; read-only kernel: %.0f GB/s\n", r.copy_gbs,
           r.read_gbs);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(o));
    return r;
}
