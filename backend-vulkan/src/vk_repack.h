#pragma once
// Q4_0 / Q8_0 weights repacked at upload on discrete GPUs (which copy weights anyway): every 8
// blocks of a row become [8 f16 scales][8 x quant bytes] (144 / 272 bytes, the size of the 8
// blocks), so a 32-element group's quants are 16-byte aligned and one (Q4_0) or two (Q8_0)
// 16-byte loads instead of word loads funnel-shifted across 2-byte aligned blocks. The shaders
// know the layout as types T_Q4_0R / T_Q8_0R (common.glsl, dq_group.glsl).
#include <cstdint>

#include "tandem/backend/backend.h"

namespace tandem::vk {

// Q4_0 or Q8_0 with rows of whole 8-block super-blocks (ne[0] % 256 == 0).
bool repackable(const WeightDesc& w);
// The shaders' type id for a repacked weight of type t (T_Q4_0R / T_Q8_0R).
uint32_t repacked_type_id(DType t);
// Rows [row0, row0 + n_rows) of w repacked into out (n_rows * row_bytes bytes).
void repack_rows(const WeightDesc& w, uint64_t row0, uint64_t n_rows, uint8_t* out);

}  // namespace tandem::vk
