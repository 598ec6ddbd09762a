#pragma once
// Rewrites a SPIR-V module that uses SPV_NV_cooperative_matrix into the same module on
// SPV_KHR_cooperative_matrix. Debian 12's glslang compiles GL_NV_cooperative_matrix but not
// GL_KHR_cooperative_matrix, while the drivers our users run (RADV, NVIDIA) expose the KHR
// extension; the two differ only in how instructions spell the same things:
//   - the matrix type gains a Use operand (A, B or accumulator), which the rewrite reads off
//     each OpCooperativeMatrixMulAddNV (so A and B must not share one SPIR-V type);
//   - loads and stores take a MemoryLayout constant (row / column major) before the stride
//     where NV took a stride and then a boolean "column major" constant.
// Throws std::runtime_error with the reason when the module does something it cannot rewrite.
#include <cstdint>
#include <vector>

namespace tandem::vk::tools {

std::vector<uint32_t> coopmat_nv_to_khr(const std::vector<uint32_t>& words);

}  // namespace tandem::vk::tools
