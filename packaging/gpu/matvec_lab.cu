// Decode-matvec lab for NVIDIA GPUs (a measuring tool, not part of the product): repacked
// Q4_0 / Q8_0 weights ([8 f16 scales][8 x Quant bytes] per 8 blocks) times q8 activations,
// several kernel designs side by side with the HIP backend's own launch_matvec_q8 (built as
// CUDA), each timed in a CUDA graph over a pool of weight copies larger than L2 (the pool size
// in MiB is the first argument) and checked against a one-thread-per-row double reference.
// GB/s = weight bytes / time; "of copy" = over cudaMemcpy D2D (read + written), as `bench`.
//
// Build (from the repository root, nvcc 12+, sm_90):
//   F="-O3 -std=c++20 -x cu -DTANDEM_HIP_ON_CUDA=1 -Ibackend-hip/src -Ibackend-hip/kernels
//      -Icore/include -include backend-hip/src/hip_compat.h -gencode arch=compute_90,code=sm_90"
//   nvcc $F -c backend-hip/kernels/hip_matvec_q8.hip -o /tmp/mvq8.o
//   g++ -std=c++20 -O2 -Icore/include -c core/src/common/dtype.cpp -o /tmp/dtype.o
//   nvcc $F -DWITH_PRODUCT -c packaging/gpu/matvec_lab.cu -o /tmp/lab.o
//   nvcc -gencode arch=compute_90,code=sm_90 /tmp/lab.o /tmp/mvq8.o /tmp/dtype.o -o matvec-lab
// Run: matvec-lab [pool MiB = 512] [variant index, -1 = all] [shapes a-i]; TANDEM_HIP_Q8_ROWS
// picks the product kernel's rows per block as in the backend.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "lab_rates.cuh"

constexpr uint32_t M4 = 0x0F0F0F0Fu;

__device__ inline float h2f(uint16_t b) {
    return __half2float(__ushort_as_half(b));
}
__device__ inline int minus8(uint32_t v) {
    return int((v + 0x78787878u) ^ 0x80808080u);
}

struct Args {
    const uint8_t* w;  // [n_out, row_bytes]
    int64_t row_bytes;
    int n_in, n_out;
    const int8_t* xq;   // [n_in] standard layout
    const float2* xds;  // [n_in/32] (d, s)
    const int4* xlo;    // [n_in/32] words 0-3 of each block
    const int4* xhi;    // [n_in/32] words 4-7
    float* y;
    const int8_t* xp;  // the product's q8 buffer: halves layout, then (d, s)
};

template <int Quant>
__device__ inline const uint8_t* grp_of(const uint8_t* row, int b) {
    return row + (b >> 3) * (16 + 8 * Quant);
}

// Reference: one thread per row, double accumulation.
template <int Quant>
__global__ void k_ref(Args a) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= a.n_out) return;
    const uint8_t* row = a.w + int64_t(r) * a.row_bytes;
    double acc = 0;
    for (int b = 0; b < a.n_in / 32; ++b) {
        const uint8_t* g = grp_of<Quant>(row, b);
        const float d = h2f(reinterpret_cast<const uint16_t*>(g)[b & 7]);
        const uint8_t* q = g + 16 + (b & 7) * Quant;
        int s = 0;
        for (int i = 0; i < 32; ++i) {
            int wv;
            if (Quant == 16)
                wv = (i < 16 ? (q[i] & 15) : (q[i - 16] >> 4)) - 8;
            else
                wv = int8_t(q[i]);
            s += wv * a.xq[b * 32 + i];
        }
        acc += double(d) * double(a.xds[b].x) * s;
    }
    a.y[r] = float(acc);
}

__device__ inline int dot8(const int (&w)[8], const int4& a, const int4& b) {
    int s = __dp4a(w[0], a.x, 0);
    s = __dp4a(w[1], a.y, s);
    s = __dp4a(w[2], a.z, s);
    s = __dp4a(w[3], a.w, s);
    s = __dp4a(w[4], b.x, s);
    s = __dp4a(w[5], b.y, s);
    s = __dp4a(w[6], b.z, s);
    s = __dp4a(w[7], b.w, s);
    return s;
}

__device__ inline float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Weights of one block as int8 words: Q4_0 nibbles (minus 8 when Minus), Q8_0 as is.
template <int Quant, bool Minus>
__device__ inline void load_block(const uint8_t* row, int b, float& d, int (&w)[8]) {
    const uint8_t* g = grp_of<Quant>(row, b);
    d = h2f(reinterpret_cast<const uint16_t*>(g)[b & 7]);
    const uint4* q = reinterpret_cast<const uint4*>(g + 16 + (b & 7) * Quant);
    if constexpr (Quant == 16) {
        const uint4 v = q[0];
        const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            w[i] = Minus ? minus8(u[i] & M4) : int(u[i] & M4);
            w[4 + i] = Minus ? minus8((u[i] >> 4) & M4) : int((u[i] >> 4) & M4);
        }
    } else {
        const uint4 c0 = q[0], c1 = q[1];
        w[0] = c0.x, w[1] = c0.y, w[2] = c0.z, w[3] = c0.w;
        w[4] = c1.x, w[5] = c1.y, w[6] = c1.z, w[7] = c1.w;
    }
}

// One block's int8 dot s scaled: d_w * d_x * s, or with Q4_0's -8 applied through the activation
// block's sum s_x (Offset8: the weights are raw nibbles).
template <bool Offset8>
__device__ inline float block_scaled(float d, int s, float dx, float sx) {
    return Offset8 ? d * (dx * float(s) - 8.0f * sx) : d * dx * float(s);
}

// v0/v1/v2: the product's current design: 128 threads, W warps per row (4 / W rows per CTA),
// thread takes blocks it, it + 32W, ...; Sum: the Q4_0 offset via the activation sums; Split:
// activation halves from xlo / xhi (coalesced) instead of the standard layout.
template <int Quant, int W, bool Sum, bool Split>
__global__ void __launch_bounds__(128) k_v0(Args a) {
    constexpr int RT = 32 * W;
    __shared__ float part[4];
    const int g = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row = blockIdx.x * (4 / W) + g / W;
    const uint8_t* wr = a.w + int64_t(row < a.n_out ? row : a.n_out - 1) * a.row_bytes;
    const int nb = a.n_in / 32;
    float acc = 0;
#pragma unroll 2
    for (int b = threadIdx.x % RT; b < nb; b += RT) {
        float d;
        int w[8];
        load_block<Quant, !Sum && Quant == 16>(wr, b, d, w);
        int4 x0, x1;
        if (Split) {
            x0 = a.xlo[b];
            x1 = a.xhi[b];
        } else {
            const int4* x4 = reinterpret_cast<const int4*>(a.xq + b * 32);
            x0 = x4[0];
            x1 = x4[1];
        }
        const float2 ds = a.xds[b];
        const int s = dot8(w, x0, x1);
        acc += block_scaled < Sum && Quant == 16 > (d, s, ds.x, ds.y);
    }
    acc = warp_sum(acc);
    if (lane == 0) part[g] = acc;
    __syncthreads();
    if (threadIdx.x % RT == 0 && row < a.n_out) {
        float v = 0;
        for (int i = 0; i < W; ++i) v += part[g + i];
        a.y[row] = v;
    }
}

// The R rows of a CTA (past the end: the last row, never written).
template <int R>
__device__ inline void row_pointers(const Args& a, int row0, const uint8_t* (&wr)[R]) {
#pragma unroll
    for (int r = 0; r < R; ++r)
        wr[r] = a.w + int64_t(row0 + r < a.n_out ? row0 + r : a.n_out - 1) * a.row_bytes;
}

// Sums each row's per-thread partials over the CTA's T threads and writes the rows.
template <int R, int T>
__device__ inline void write_rows(const Args& a, int row0, const float (&acc)[R]) {
    __shared__ float part[T / 32][R];
    const int lane = threadIdx.x % 32, wp = threadIdx.x / 32;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const float v = warp_sum(acc[r]);
        if (lane == 0) part[wp][r] = v;
    }
    __syncthreads();
    if (threadIdx.x < R && row0 + threadIdx.x < a.n_out) {
        float v = 0;
#pragma unroll
        for (int i = 0; i < T / 32; ++i) v += part[i][threadIdx.x];
        a.y[row0 + threadIdx.x] = v;
    }
}

// v3: a CTA of T threads takes R rows; its threads split a row's blocks (b = tid, tid + T, ...)
// and each activation block, loaded once, meets the R rows' weights. Sum + Split always.
template <int Quant, int R, int T, int U>
__global__ void __launch_bounds__(T) k_v3(Args a) {
    const int row0 = blockIdx.x * R;
    const uint8_t* wr[R];
    row_pointers<R>(a, row0, wr);
    const int nb = a.n_in / 32;
    float acc[R] = {};
#pragma unroll U
    for (int b = threadIdx.x; b < nb; b += T) {
        const int4 x0 = a.xlo[b], x1 = a.xhi[b];
        const float2 ds = a.xds[b];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            float d;
            int w[8];
            load_block<Quant, false>(wr[r], b, d, w);
            const int s = dot8(w, x0, x1);
            acc[r] += block_scaled<Quant == 16>(d, s, ds.x, ds.y);
        }
    }
    write_rows<R, T>(a, row0, acc);
}

// v4: v3 with block-pair items (a thread takes blocks 2p, 2p + 1: 32 contiguous quant bytes of
// Q4_0 per row and trip).
template <int Quant, int R, int T>
__global__ void __launch_bounds__(T) k_v4(Args a) {
    const int row0 = blockIdx.x * R;
    const uint8_t* wr[R];
    row_pointers<R>(a, row0, wr);
    const int nb = a.n_in / 32;
    float acc[R] = {};
    // thread takes block pairs: blocks 2p, 2p+1 (consecutive 32 B of Q4_0 quants)
    for (int p = threadIdx.x; p < nb / 2; p += T) {
        const int b = 2 * p;
        const int4 x0 = a.xlo[b], x1 = a.xhi[b], x2 = a.xlo[b + 1], x3 = a.xhi[b + 1];
        const float4 ds = *reinterpret_cast<const float4*>(a.xds + b);
#pragma unroll
        for (int r = 0; r < R; ++r) {
            float d0, d1;
            int w0[8], w1[8];
            load_block<Quant, false>(wr[r], b, d0, w0);
            load_block<Quant, false>(wr[r], b + 1, d1, w1);
            const int s0 = dot8(w0, x0, x1), s1 = dot8(w1, x2, x3);
            acc[r] += block_scaled<Quant == 16>(d0, s0, ds.x, ds.y) +
                      block_scaled<Quant == 16>(d1, s1, ds.z, ds.w);
        }
    }
    write_rows<R, T>(a, row0, acc);
}

#ifdef WITH_PRODUCT
#include "hip_ops.h"
#include "hip_packed.h"
#endif

struct Variant {
    std::string name;
    int rows_per_cta, threads;
    std::function<void(const Args&, dim3, cudaStream_t)> launch;
};

template <int Quant>
std::vector<Variant> variants() {
    std::vector<Variant> v;
#ifdef WITH_PRODUCT
    v.push_back(
        {"product", 1, 0, [](const Args& a, dim3, cudaStream_t s) {
             const auto t = Quant == 16 ? tandem::hip::kQ4_0R : tandem::hip::kQ8_0R;
             if (!tandem::hip::launch_matvec_q8(t, a.w, a.n_in, a.n_out, a.xp, 1, nullptr, a.y, s))
                 fprintf(stderr, "product kernel refused\n");
         }});
#endif
#define V0(W, S, P)                                                                               \
    v.push_back(                                                                                  \
        {"v0 W" #W " sum" #S " split" #P, 4 / W, 128, [](const Args& a, dim3 g, cudaStream_t s) { \
             k_v0<Quant, W, S, P><<<g, 128, 0, s>>>(a);                                           \
         }})
    V0(2, false, false);
    V0(2, true, false);
    V0(2, true, true);
    V0(1, true, true);
    V0(4, true, true);
#define V3(R, T, U)                                                                           \
    v.push_back({"v3 R" #R " T" #T " U" #U, R, T, [](const Args& a, dim3 g, cudaStream_t s) { \
                     k_v3<Quant, R, T, U><<<g, T, 0, s>>>(a);                                 \
                 }})
    V3(1, 128, 1);
    V3(2, 128, 1);
    V3(2, 128, 2);
    V3(4, 128, 1);
    V3(4, 128, 2);
    V3(8, 128, 1);
    V3(2, 256, 1);
    V3(4, 256, 1);
    V3(8, 256, 1);
    V3(4, 64, 2);
    V3(8, 64, 1);
#define V4(R, T)                                                                      \
    v.push_back({"v4 R" #R " T" #T, R, T, [](const Args& a, dim3 g, cudaStream_t s) { \
                     k_v4<Quant, R, T><<<g, T, 0, s>>>(a);                            \
                 }})
    V4(2, 64);
    V4(4, 64);
    V4(2, 128);
    V4(4, 128);
    return v;
}

static uint16_t f2h(float f) {
    __half h = __float2half(f);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
}

template <int Quant>
void run_shape(const char* label, int n_out, int n_in, double copy_gbs, int only, int64_t pool_mb) {
    const int64_t rb = int64_t(n_in) / 256 * (16 + 8 * Quant);
    const int64_t mat = rb * n_out;
    const int64_t pool_bytes = std::max<int64_t>(mat, pool_mb << 20);
    const int n_mats = int((pool_bytes + mat - 1) / mat);
    // host data: one matrix pattern, copied into the pool
    std::vector<uint8_t> h(mat);
    uint32_t seed = 12345;
    auto rnd = [&]() {
        seed = seed * 1664525u + 1013904223u;
        return seed >> 8;
    };
    for (int64_t r = 0; r < n_out; ++r)
        for (int64_t gI = 0; gI < rb / (16 + 8 * Quant); ++gI) {
            uint8_t* g = h.data() + r * rb + gI * (16 + 8 * Quant);
            for (int b = 0; b < 8; ++b) {
                const uint16_t d = f2h(0.001f + 0.01f * float(rnd() % 1000) / 1000.0f);
                std::memcpy(g + 2 * b, &d, 2);
            }
            for (int i = 0; i < 8 * Quant; ++i) g[16 + i] = uint8_t(rnd());
        }
    uint8_t* dw;
    CK(cudaMalloc(&dw, mat * n_mats));
    for (int m = 0; m < n_mats; ++m)
        CK(cudaMemcpy(dw + m * mat, h.data(), mat, cudaMemcpyHostToDevice));
    // activations
    std::vector<int8_t> xq(n_in);
    std::vector<float2> xds(n_in / 32);
    std::vector<int4> xlo(n_in / 32), xhi(n_in / 32);
    for (int b = 0; b < n_in / 32; ++b) {
        int s = 0;
        for (int i = 0; i < 32; ++i) {
            xq[b * 32 + i] = int8_t(int(rnd() % 255) - 127);
            s += xq[b * 32 + i];
        }
        const float d = 0.01f + 0.001f * float(rnd() % 100);
        xds[b] = make_float2(d, d * float(s));
        std::memcpy(&xlo[b], &xq[b * 32], 16);
        std::memcpy(&xhi[b], &xq[b * 32 + 16], 16);
    }
    int8_t* dxq;
    float2* dds;  // right after dxq (the product's q8 buffer: values, then (d, s))
    int4 *dlo, *dhi;
    float *dy, *dref;
    CK(cudaMalloc(&dxq, n_in + n_in / 32 * 8));
    dds = reinterpret_cast<float2*>(dxq + n_in);
    CK(cudaMalloc(&dlo, n_in / 32 * 16));
    CK(cudaMalloc(&dhi, n_in / 32 * 16));
    CK(cudaMalloc(&dy, n_out * 4));
    CK(cudaMalloc(&dref, n_out * 4));
    CK(cudaMemcpy(dxq, xq.data(), n_in, cudaMemcpyHostToDevice));
    std::vector<int8_t> xp(n_in + n_in / 32 * 8);
    for (int i = 0; i < n_in; ++i) {
        const int b = i / 32, j = i % 32;
        xp[((b / 8) * 16 + 8 * (j / 16) + b % 8) * 16 + j % 16] = xq[i];
    }
    std::memcpy(xp.data() + n_in, xds.data(), n_in / 32 * 8);
    int8_t* dxp;
    CK(cudaMalloc(&dxp, xp.size()));
    CK(cudaMemcpy(dxp, xp.data(), xp.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dds, xds.data(), n_in / 32 * 8, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dlo, xlo.data(), n_in / 32 * 16, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dhi, xhi.data(), n_in / 32 * 16, cudaMemcpyHostToDevice));
    Args a{dw, rb, n_in, n_out, dxq, dds, dlo, dhi, dref, dxp};
    k_ref<Quant><<<(n_out + 127) / 128, 128>>>(a);
    CK(cudaDeviceSynchronize());
    std::vector<float> ref(n_out), got(n_out);
    CK(cudaMemcpy(ref.data(), dref, n_out * 4, cudaMemcpyDeviceToHost));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    printf("\n== %s Q%s %d x %d (%.1f MB, pool of %d)\n", label, Quant == 16 ? "4_0" : "8_0", n_out,
           n_in, mat / 1e6, n_mats);
    int vi = 0;
    for (const Variant& v : variants<Quant>()) {
        ++vi;
        if (only >= 0 && vi - 1 != only) continue;
        const dim3 grid((n_out + v.rows_per_cta - 1) / v.rows_per_cta);
        a.y = dy;
        a.w = dw;
        CK(cudaMemset(dy, 0, n_out * 4));
        v.launch(a, grid, st);
        CK(cudaStreamSynchronize(st));
        CK(cudaGetLastError());
        CK(cudaMemcpy(got.data(), dy, n_out * 4, cudaMemcpyDeviceToHost));
        double worst = 0, scale = 0;
        for (int i = 0; i < n_out; ++i) scale = std::max(scale, double(std::fabs(ref[i])));
        for (int i = 0; i < n_out; ++i)
            worst = std::max(worst, std::fabs(double(got[i]) - ref[i]) / (scale + 1e-30));
        // graph: the pool's matrices one after another, 4 rounds
        const int launches = std::max(n_mats, 32);
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < launches; ++i) {
            Args b = a;
            b.w = dw + (i % n_mats) * mat;
            v.launch(b, grid, st);
        }
        CK(cudaStreamEndCapture(st, &graph));
        CK(cudaGraphInstantiate(&exec, graph, 0));
        CK(cudaGraphLaunch(exec, st));
        CK(cudaStreamSynchronize(st));
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        const int reps = 5;
        CK(cudaEventRecord(e0, st));
        for (int i = 0; i < reps; ++i) CK(cudaGraphLaunch(exec, st));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        const double us = ms * 1e3 / (reps * launches);
        const double gbs = mat / (us * 1e-6) / 1e9;
        printf("  %-24s %8.2f us  %7.0f GB/s  %.2f of copy   err %.1e%s\n", v.name.c_str(), us, gbs,
               gbs / copy_gbs, worst, worst > 1e-4 ? "  WRONG" : "");
        CK(cudaGraphExecDestroy(exec));
        CK(cudaGraphDestroy(graph));
        CK(cudaEventDestroy(e0));
        CK(cudaEventDestroy(e1));
    }
    CK(cudaStreamDestroy(st));
    cudaFree(dw);
    cudaFree(dxq);
    cudaFree(dxp);
    cudaFree(dlo);
    cudaFree(dhi);
    cudaFree(dy);
    cudaFree(dref);
}

int main(int argc, char** argv) {
    const int64_t pool_mb = argc > 1 ? atoll(argv[1]) : 512;
    const int only = argc > 2 ? atoi(argv[2]) : -1;
    const char* shapes = argc > 3 ? argv[3] : "abcdefghi";
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const double copy = measure_rates(prop.multiProcessorCount).copy_gbs;
    if (strchr(shapes, 'a')) run_shape<16>("8B gate+up", 28672, 4096, copy, only, pool_mb);
    if (strchr(shapes, 'b')) run_shape<16>("8B down", 4096, 14336, copy, only, pool_mb);
    if (strchr(shapes, 'c')) run_shape<16>("8B qkv", 6144, 4096, copy, only, pool_mb);
    if (strchr(shapes, 'd')) run_shape<16>("8B o", 4096, 4096, copy, only, pool_mb);
    if (strchr(shapes, 'e')) run_shape<16>("70B gate+up", 57344, 8192, copy, only, pool_mb);
    if (strchr(shapes, 'f')) run_shape<16>("70B down", 8192, 28672, copy, only, pool_mb);
    if (strchr(shapes, 'g')) run_shape<32>("8B gate+up", 28672, 4096, copy, only, pool_mb);
    if (strchr(shapes, 'h')) run_shape<32>("8B down", 4096, 14336, copy, only, pool_mb);
    if (strchr(shapes, 'i')) run_shape<32>("70B gate+up", 57344, 8192, copy, only, pool_mb);
    return 0;
}
