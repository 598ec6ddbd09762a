#pragma once
// The rotary embedding's arithmetic, shared by the rope kernel and the q/k/v matvec that ropes
// its own rows, so both give the same bits: a one-ulp difference in q or k can flip an int8
// rounding of a later activation and move a quantised model's logits by ~1 %.
#include <cstdint>

namespace tandem::hip {

// cos and sin of rotation pair i (of n_rot / 2) at position pos; angles in double, as the CPU
// reference (they grow with the position). factors: per-pair divisors of the frequency, or null.
__device__ inline float2 rope_cos_sin(int32_t pos, int64_t i, int64_t n_rot, float freq_base,
                                      float freq_scale, const float* factors) {
    double inv = pow(double(freq_base), -2.0 * double(i) / double(n_rot));
    if (factors) inv /= factors[i];
    const double a = double(pos) * double(freq_scale) * inv;
    return make_float2(float(cos(a)), float(sin(a)));
}

// One element of a rotated pair (x0, x1): x0 c - x1 s (first) or x0 s + x1 c (second), with
// the fused multiply-adds spelled out so every caller compiles to the same instructions.
__device__ inline float rope_rotate(float x0, float x1, float2 cs, bool second) {
    return second ? fmaf(x0, cs.y, x1 * cs.x) : fmaf(x0, cs.x, -(x1 * cs.y));
}

}  // namespace tandem::hip
