#pragma once
// Q4_0 / Q8_0 / Q6_K weights repacked at upload on discrete GPUs (which copy weights anyway):
// every 8 blocks of a row become [8 f16 scales][8 x quant bytes] (144 / 272 bytes, the size of
// the 8 blocks), so a 32-element group's quants are 16-byte aligned and one (Q4_0) or two (Q8_0)
// 16-byte loads instead of word loads funnel-shifted across 2-byte aligned blocks; every 8 Q6_K
// super-blocks become their 8 208-byte bodies then their 8 f16 d's (1680 bytes), so the bodies
// are 16-byte aligned. The shaders know the layouts as types T_Q4_0R / T_Q8_0R / T_Q6_KR
// (common.glsl, dq_group.glsl).
#include <cstdint>

#include "tandem/backend/backend.h"

namespace tandem::vk {

// Q4_0 or Q8_0 with rows of whole groups of 8 blocks (ne[0] % 256 == 0), Q6_K with rows of
// whole groups of 8 super-blocks (ne[0] % 2048 == 0).
bool repackable(const WeightDesc& w);
// The shaders' type id for a repacked weight of type t (T_Q4_0R / T_Q8_0R / T_Q6_KR).
uint32_t repacked_type_id(DType t);
// Rows [row0, row0 + n_rows) of w repacked into out (n_rows * row_bytes bytes).
void repack_rows(const WeightDesc& w, uint64_t row0, uint64_t n_rows, uint8_t* out);

}  // namespace tandem::vk
