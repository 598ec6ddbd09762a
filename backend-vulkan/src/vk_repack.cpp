#include "vk_repack.h"

namespace tandem::vk {

uint32_t repacked_type_id(DType t) {
    // common.glsl: T_Q4_0R, T_Q8_0R, T_Q6_KR
    return t == DType::Q4_0 ? 102u : t == DType::Q8_0 ? 108u : 114u;
}

}  // namespace tandem::vk
