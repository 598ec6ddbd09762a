#version 450
// One workgroup per group of `group` elements: y = x / rms(x) (* w).
#include "common.glsl"
layout(local_size_x = 128) in;
layout(push_constant) uniform P { Floats x; Floats w; Floats y; uint group; uint n_groups; float eps; uint has_w; } p;
shared float red[128];
void main() {
    const uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * 32768u;
    if (g >= p.n_groups) return;
    const uint tid = gl_LocalInvocationID.x, base = g * p.group;
    float ss = 0.0;
    for (uint i = tid; i < p.group; i += 128u) { float v = p.x.v[base + i]; ss += v * v; }
    red[tid] = ss;
    barrier();
    for (uint s = 64u; s > 0u; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        barrier();
    }
    const float scale = inversesqrt(red[0] / float(p.group) + p.eps);
    for (uint i = tid; i < p.group; i += 128u) {
        float v = p.x.v[base + i] * scale;
        p.y.v[base + i] = p.has_w != 0u ? v * p.w.v[i] : v;
    }
}
