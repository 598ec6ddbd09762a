#pragma once
// The matrix-unit prefill (launch_mat_mul_mma) against the f32 tiles on one small product; empty
// when they agree (NMSE < 1e-5), else why not. Included by .hip files only.
#include <string>

namespace tandem::hip {

std::string mma_prefill_check(hipStream_t s);
// The matrix-unit prefill attention against the f32 flash tiles (f16 cache, GQA 4:1, head_dim
// 64 and 128, a window, a softcap), the same way.
std::string mma_attention_check(hipStream_t s);

}  // namespace tandem::hip
