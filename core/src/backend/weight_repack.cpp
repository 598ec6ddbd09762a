#include "tandem/backend/weight_repack.h"

#include <cstring>
#include <string>

#include "tandem/common/dtype.h"
#include "tandem/common/error.h"

namespace tandem {

bool repackable(const WeightDesc& w) {
    if (w.type == DType::Q6_K) return w.ne[0] % 2048 == 0;  // whole groups of 8 super-blocks
    return (w.type == DType::Q4_0 || w.type == DType::Q8_0) && w.ne[0] % 256 == 0;
}

namespace {

// Q6_K: every 8 super-blocks (210 bytes: a 208-byte body, then d) become 8 bodies, then 8 d's.
void repack_q6_k(const uint8_t* src, uint64_t rb, uint64_t n_rows, uint8_t* out) {
    constexpr uint64_t kBlock = 210, kBody = 208, kGroup = 8 * kBlock;
    for (uint64_t r = 0; r < n_rows; ++r)
        for (uint64_t g = 0; g < rb / kGroup; ++g) {
            const uint8_t* in = src + r * rb + g * kGroup;
            uint8_t* o = out + r * rb + g * kGroup;
            for (uint64_t b = 0; b < 8; ++b) {
                std::memcpy(o + b * kBody, in + b * kBlock, kBody);
                std::memcpy(o + 8 * kBody + 2 * b, in + b * kBlock + kBody, 2);
            }
        }
}

}  // namespace

void repack_rows(const WeightDesc& w, uint64_t row0, uint64_t n_rows, uint8_t* out) {
    if (!repackable(w))
        throw Error("repack: weight '" + w.name + "' (" + std::string(dtype_name(w.type)) +
                    ", rows of " + std::to_string(w.ne[0]) + ") has no repacked layout");
    const uint64_t rb = row_bytes(w.type, static_cast<uint64_t>(w.ne[0]));
    const auto* src = static_cast<const uint8_t*>(w.data) + row0 * rb;
    if (w.type == DType::Q6_K) {
        repack_q6_k(src, rb, n_rows, out);
        return;
    }
    const uint64_t quant = w.type == DType::Q4_0 ? 16 : 32;  // quant bytes per block
    const uint64_t block = 2 + quant, super = 8 * block;     // bytes: f16 scale + quants
    for (uint64_t r = 0; r < n_rows; ++r)
        for (uint64_t s = 0; s < rb / super; ++s) {
            const uint8_t* in = src + r * rb + s * super;
            uint8_t* o = out + r * rb + s * super;
            for (uint64_t b = 0; b < 8; ++b) {
                std::memcpy(o + 2 * b, in + b * block, 2);
                std::memcpy(o + 16 + b * quant, in + b * block + 2, quant);
            }
        }
}

}  // namespace tandem
