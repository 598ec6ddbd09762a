#version 450
// Writes n_tok rows of `width` floats into the cache at rows n_past.., as f16 pairs or f32;
// n_past comes from the step parameters (step.v[0]), so recorded commands serve every step.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint F16 = 1;
layout(push_constant) uniform P { Floats x; Uints cache; Uints step; uint n; uint width; } p;
void main() {
    const uint stride = gl_NumWorkGroups.x * 256u, row0_elems = p.step.v[0] * p.width;
    if (F16 != 0u) {
        for (uint i = gl_GlobalInvocationID.x; i < p.n / 2u; i += stride)
            p.cache.v[row0_elems / 2u + i] = packHalf2x16(vec2(p.x.v[2u * i], p.x.v[2u * i + 1u]));
    } else {
        for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride)
            p.cache.v[row0_elems + i] = floatBitsToUint(p.x.v[i]);
    }
}
