#include "vk_repack.h"

#include <cstring>

#include "tandem/common/dtype.h"

namespace tandem::vk {

bool repackable(const WeightDesc& w) {
    return (w.type == DType::Q4_0 || w.type == DType::Q8_0) && w.ne[0] % 256 == 0;
}

uint32_t repacked_type_id(DType t) {
    return t == DType::Q4_0 ? 102u : 108u;  // common.glsl: T_Q4_0R, T_Q8_0R
}

void repack_rows(const WeightDesc& w, uint64_t row0, uint64_t n_rows, uint8_t* out) {
    const uint64_t quant = w.type == DType::Q4_0 ? 16 : 32;  // quant bytes per block
    const uint64_t block = 2 + quant, super = 8 * block;     // bytes: f16 scale + quants
    const uint64_t rb = row_bytes(w.type, static_cast<uint64_t>(w.ne[0]));
    const auto* src = static_cast<const uint8_t*>(w.data) + row0 * rb;
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

}  // namespace tandem::vk
