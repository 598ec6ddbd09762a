#pragma once
// Weights repacked at upload (tandem/backend/weight_repack.h: Q4_0 / Q8_0 rows of whole groups
// of 8 blocks, [8 f16 scales][8 x quants]; Q6_K rows of whole groups of 8 super-blocks, [8 x
// 208-byte bodies][8 f16 d's]) reach the kernels under type ids past DType's own,
// so every kernel that reads a weight takes the layout through its type template like any
// other type (load_weight, Blocks, Q8Dot). Sizes, names and checks use the file type.
#include <cstdint>
#include <type_traits>

#include "tandem/common/dtype.h"

namespace tandem::hip {

inline constexpr DType kQ4_0R = static_cast<DType>(0x100u | uint32_t(DType::Q4_0));
inline constexpr DType kQ8_0R = static_cast<DType>(0x100u | uint32_t(DType::Q8_0));
inline constexpr DType kQ6_KR = static_cast<DType>(0x100u | uint32_t(DType::Q6_K));

constexpr bool is_packed(DType t) {
    return t == kQ4_0R || t == kQ8_0R || t == kQ6_KR;
}
// The file type behind a kernel type id.
constexpr DType file_type(DType t) {
    return t == kQ4_0R ? DType::Q4_0 : t == kQ8_0R ? DType::Q8_0 : t == kQ6_KR ? DType::Q6_K : t;
}
// The kernel type id of a repacked weight of file type t (Q4_0, Q8_0 or Q6_K).
constexpr DType packed_type(DType t) {
    return t == DType::Q4_0 ? kQ4_0R : t == DType::Q8_0 ? kQ8_0R : kQ6_KR;
}
// Weights per group of a repacked row (rows are whole groups): 8 blocks or 8 super-blocks.
constexpr int64_t packed_group_weights(DType t) {
    return t == kQ6_KR ? 2048 : 256;
}

// Repacked Q6_K: groups of 8 super-blocks (8 x 210 bytes), their 208-byte bodies {ql[128],
// qh[64], int8 scales[16]} then their 8 f16 d's. Super-block kb of a row: its body, its d.
inline constexpr int64_t kQ6KRBody = 208, kQ6KRGroup = 8 * 210;
__device__ inline const uint8_t* q6kr_body(const uint8_t* row, int64_t kb) {
    return row + (kb / 8) * kQ6KRGroup + (kb % 8) * kQ6KRBody;
}
__device__ inline const uint8_t* q6kr_d(const uint8_t* row, int64_t kb) {
    return row + (kb / 8) * kQ6KRGroup + 8 * kQ6KRBody + 2 * (kb % 8);
}

// A kernel's type template argument: __global__ templates take the id as a number, since nvcc's
// host stubs cannot spell an enum value that is not an enumerator (kQ4_0R).
constexpr uint32_t type_id(DType t) {
    return uint32_t(t);
}

// f(std::integral_constant<DType, P>{}) for the packed type id t; false (f not called) for
// any other type. The launchers' switches cover DType's own values.
template <class F>
bool visit_packed(DType t, F&& f) {
    if (t == kQ4_0R) {
        f(std::integral_constant<DType, kQ4_0R>{});
        return true;
    }
    if (t == kQ8_0R) {
        f(std::integral_constant<DType, kQ8_0R>{});
        return true;
    }
    if (t == kQ6_KR) {
        f(std::integral_constant<DType, kQ6_KR>{});
        return true;
    }
    return false;
}

}  // namespace tandem::hip
