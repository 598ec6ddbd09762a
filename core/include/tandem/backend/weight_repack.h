#pragma once
// Q4_0 / Q8_0 / Q6_K weights repacked at upload by GPU backends that copy weights anyway
// (discrete GPUs): the file blocks are 2-byte aligned (18 / 34 / 210 bytes), so a kernel reads
// them with word or half-word loads; the repacked rows give it 16-byte loads.
// - Q4_0 / Q8_0: every 8 blocks of a row become [8 f16 scales][8 x quant bytes] (144 / 272
//   bytes, the size of the 8 blocks), so a block's quants are 16-byte aligned.
// - Q6_K: every 8 super-blocks become their 8 208-byte bodies, then their 8 f16 d's (1680
//   bytes), so the bodies are 16-byte aligned.
// Row lengths, offsets and the 16-byte alignment of rows are those of the file layout.
#include <cstdint>

#include "tandem/backend/backend.h"

namespace tandem {

// Q4_0 or Q8_0 with rows of whole groups of 8 blocks (ne[0] % 256 == 0), Q6_K with rows of
// whole groups of 8 super-blocks (ne[0] % 2048 == 0).
bool repackable(const WeightDesc& w);
// Rows [row0, row0 + n_rows) of w (a repackable weight) repacked into out (n_rows * row
// bytes). A weight that is not repackable is an Error.
void repack_rows(const WeightDesc& w, uint64_t row0, uint64_t n_rows, uint8_t* out);

}  // namespace tandem
