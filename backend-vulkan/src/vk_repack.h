#pragma once
// The shaders' names for weights repacked at upload (tandem/backend/weight_repack.h): types
// T_Q4_0R / T_Q8_0R / T_Q6_KR (common.glsl, dq_group.glsl).
#include <cstdint>

#include "tandem/backend/weight_repack.h"
#include "tandem/common/dtype.h"

namespace tandem::vk {

// The shaders' type id for a repacked weight of type t (T_Q4_0R / T_Q8_0R / T_Q6_KR).
uint32_t repacked_type_id(DType t);

}  // namespace tandem::vk
