#pragma once
// One wave's 16 x 16 x 16 product on the GPU's matrix units: C[16 m][16 n] += A[16 m][16 k] x
// B[16 k][16 n], f16 inputs, f32 sums. Both inputs come from shared-memory tiles stored with k
// contiguous, A as [m][k] rows and B as [n][k] rows (or B as [k][n] rows: mma_load_b_kn), `ld`
// halves apart (a multiple of 8), each fragment's first row 16-byte aligned (NVIDIA's fragments
// come by ldmatrix).
//
// TANDEM_MMA_KIND says which instruction this device compilation got:
//   1  NVIDIA sm_80+ (the CUDA path): two mma.sync m16n8k16, fragments by 32-bit shared loads
//   2  AMD CDNA (gfx908 / gfx90a / gfx94x, wave64): v_mfma_f32_16x16x16f16
//   3  AMD RDNA3 (gfx11, wave32): v_wmma_f32_16x16x16_f16
//   0  none (gfx1030, host pass): kernels built on it compile to nothing; the host asks the
//      device which kind it got (mma_kind()) before launching them.
// Lane layouts: PTX ISA "mma.m16n8k16" fragments; AMD's matrix instruction calculator for
// v_mfma_f32_16x16x16f16 (A[i][k] in lane i + 16 (k / 4), item k % 4; D[i][j] in lane
// j + 16 (i / 4), item i % 4) and the RDNA3 ISA for v_wmma (lanes l and l + 16 both hold row /
// column l of A / B, D[2e + l / 16][l % 16] in item e). Nothing here has run on AMD hardware:
// the backend checks the kernel against the f32 tiles on first use (hip_backend.hip).
#include <cstdint>
#if defined(TANDEM_HIP_ON_CUDA)
#include <cuda_fp16.h>
#else
#include <hip/hip_fp16.h>
#endif

#if defined(TANDEM_HIP_ON_CUDA)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TANDEM_MMA_KIND 1
#endif
#elif defined(__HIP_DEVICE_COMPILE__)
#if defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || \
    defined(__gfx942__)
#define TANDEM_MMA_KIND 2
#elif (defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) ||  \
       defined(__gfx1103__) || defined(__gfx1150__) || defined(__gfx1151__)) && \
    defined(__has_builtin)
#if __has_builtin(__builtin_amdgcn_wmma_f32_16x16x16_f16_w32) && __AMDGCN_WAVEFRONT_SIZE == 32
#define TANDEM_MMA_KIND 3
#endif
#endif
#endif
#if !defined(TANDEM_MMA_KIND)
#define TANDEM_MMA_KIND 0
#endif

namespace tandem::hip {

// The wave the fragments span: 64 lanes for MFMA, 32 elsewhere.
constexpr int kMmaWave = TANDEM_MMA_KIND == 2 ? 64 : 32;

// Two floats as f16 bits (round to nearest even) in one word, a low.
__device__ inline uint32_t pack_half2(float a, float b) {
    const __half2 h = __floats2half2_rn(a, b);
    uint32_t u;
    __builtin_memcpy(&u, &h, 4);
    return u;
}

// Eight floats as f16 bits in one 16-byte word, v[0] lowest.
__device__ inline uint4 pack8_half(const float* v) {
    return make_uint4(pack_half2(v[0], v[1]), pack_half2(v[2], v[3]), pack_half2(v[4], v[5]),
                      pack_half2(v[6], v[7]));
}

#if TANDEM_MMA_KIND == 1
struct MmaAcc {
    float v[8];  // n-half h: v[4h + 0..1] at (g, 8h + 2t + 0..1), v[4h + 2..3] at (g + 8, ...)
};
struct MmaA {
    uint32_t r[4];
};
struct MmaB {
    uint32_t r[4];  // n-half h: r[2h], r[2h + 1]
};
constexpr int kMmaAccItems = 8;
__device__ inline int mma_acc_m(int lane, int e) {
    return lane / 4 + 8 * ((e / 2) % 2);
}
__device__ inline int mma_acc_n(int lane, int e) {
    return 8 * (e / 4) + 2 * (lane % 4) + e % 2;
}
// Four 8 x 8 f16 matrices of a shared-memory tile in one instruction: lane l names row l % 8 of
// matrix l / 8 (16-byte aligned) and gets r[i] = matrix i's (row l / 4, columns 2 (l % 4) + 0..1),
// the fragment order of mma.m16n8k16. It moves the bytes four 32-bit loads a lane would, in a
// quarter of the instructions.
__device__ inline void ldsm_x4(uint32_t (&r)[4], const uint16_t* p) {
    const auto a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory");  // after the tile's plain stores, whatever the compiler sees
}
// A: matrices (rows 0-7, k 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15).
__device__ inline void mma_load_a(MmaA& a, const uint16_t* tile, int ld, int lane) {
    ldsm_x4(a.r, tile + (lane % 16) * ld + 8 * (lane / 16));
}
// B ([n][k] rows): matrices (n 0-7, k 0-7), (0-7, 8-15), (8-15, 0-7), (8-15, 8-15).
__device__ inline void mma_load_b(MmaB& b, const uint16_t* tile, int ld, int lane) {
    ldsm_x4(b.r, tile + (lane % 8 + 8 * (lane / 16)) * ld + 8 * ((lane / 8) % 2));
}
// B from a tile stored [k][n] (n contiguous: a V tile as the cache holds it), by ldmatrix.trans:
// lane l names row l % 8 + 8 ((l / 8) % 2) (k) at column 8 (l / 16) (n), the matrices in
// mma_load_b's order.
__device__ inline void mma_load_b_kn(MmaB& b, const uint16_t* tile, int ld, int lane) {
    const auto a = static_cast<uint32_t>(
        __cvta_generic_to_shared(tile + (lane % 8 + 8 * ((lane / 8) % 2)) * ld + 8 * (lane / 16)));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(b.r[0]), "=r"(b.r[1]), "=r"(b.r[2]), "=r"(b.r[3])
                 : "r"(a)
                 : "memory");
}
__device__ inline void mma_run(MmaAcc& c, const MmaA& a, const MmaB& b) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c.v[4 * h]), "+f"(c.v[4 * h + 1]), "+f"(c.v[4 * h + 2]), "+f"(c.v[4 * h + 3])
            : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[2 * h]),
              "r"(b.r[2 * h + 1]));
}
#elif TANDEM_MMA_KIND == 2
typedef _Float16 MmaHalf4 __attribute__((ext_vector_type(4)));
typedef float MmaFloat4 __attribute__((ext_vector_type(4)));
struct MmaAcc {
    MmaFloat4 v;  // item e at (4 (lane / 16) + e, lane % 16)
};
struct MmaA {
    MmaHalf4 h;  // A[lane % 16][4 (lane / 16) + 0..3]
};
using MmaB = MmaA;  // B[4 (lane / 16) + 0..3][lane % 16]
constexpr int kMmaAccItems = 4;
__device__ inline int mma_acc_m(int lane, int e) {
    return 4 * (lane / 16) + e;
}
__device__ inline int mma_acc_n(int lane, int /*e*/) {
    return lane % 16;
}
__device__ inline void mma_load_a(MmaA& a, const uint16_t* tile, int ld, int lane) {
    a.h = *reinterpret_cast<const MmaHalf4*>(tile + (lane % 16) * ld + 4 * (lane / 16));
}
__device__ inline void mma_load_b(MmaB& b, const uint16_t* tile, int ld, int lane) {
    mma_load_a(b, tile, ld, lane);
}
// B from a tile stored [k][n]: B[4 (lane / 16) + i][lane % 16], four 2-byte loads.
__device__ inline void mma_load_b_kn(MmaB& b, const uint16_t* tile, int ld, int lane) {
    const _Float16* p = reinterpret_cast<const _Float16*>(tile) + 4 * (lane / 16) * ld + lane % 16;
#pragma unroll
    for (int i = 0; i < 4; ++i) b.h[i] = p[i * ld];
}
__device__ inline void mma_run(MmaAcc& c, const MmaA& a, const MmaB& b) {
    c.v = __builtin_amdgcn_mfma_f32_16x16x16f16(a.h, b.h, c.v, 0, 0, 0);
}
#elif TANDEM_MMA_KIND == 3
typedef _Float16 MmaHalf8 __attribute__((ext_vector_type(8)));
typedef _Float16 MmaHalf16 __attribute__((ext_vector_type(16)));
typedef float MmaFloat8 __attribute__((ext_vector_type(8)));
struct MmaAcc {
    MmaFloat8 v;  // item e at (2e + lane / 16, lane % 16)
};
struct MmaA {
    MmaHalf16 h;  // A[lane % 16][0..15]
};
using MmaB = MmaA;  // B[0..15][lane % 16]
constexpr int kMmaAccItems = 8;
__device__ inline int mma_acc_m(int lane, int e) {
    return 2 * e + lane / 16;
}
__device__ inline int mma_acc_n(int lane, int /*e*/) {
    return lane % 16;
}
__device__ inline void mma_load_a(MmaA& a, const uint16_t* tile, int ld, int lane) {
    // Two 16-byte loads: the tiles' rows are 16-byte aligned, not 32.
    const auto* p = reinterpret_cast<const MmaHalf8*>(tile + (lane % 16) * ld);
    a.h = __builtin_shufflevector(p[0], p[1], 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
__device__ inline void mma_load_b(MmaB& b, const uint16_t* tile, int ld, int lane) {
    mma_load_a(b, tile, ld, lane);
}
// B from a tile stored [k][n]: column lane % 16, sixteen 2-byte loads.
__device__ inline void mma_load_b_kn(MmaB& b, const uint16_t* tile, int ld, int lane) {
    const _Float16* p = reinterpret_cast<const _Float16*>(tile) + lane % 16;
#pragma unroll
    for (int i = 0; i < 16; ++i) b.h[i] = p[i * ld];
}
__device__ inline void mma_run(MmaAcc& c, const MmaA& a, const MmaB& b) {
    c.v = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a.h, b.h, c.v);
}
#endif

#if TANDEM_MMA_KIND != 0
__device__ inline void mma_zero(MmaAcc& c) {
#pragma unroll
    for (int e = 0; e < kMmaAccItems; ++e) c.v[e] = 0.0f;
}
#endif

}  // namespace tandem::hip
