#version 450
// y[i] = the sum of a split matmul's parts[z n + i] over its splits, in split order, plus the
// bias of i's row (matmul_tiled.comp's splits).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform P { Floats parts; Floats bias; Floats y; uint n; uint n_out; uint splits; uint has_bias; } p;
void main() {
    const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.z * 32768u * 256u;
    if (i >= p.n) return;
    float v = 0.0;
    for (uint z = 0u; z < p.splits; ++z) v += p.parts.v[z * p.n + i];
    p.y.v[i] = v + (p.has_bias != 0u ? p.bias.v[i % p.n_out] : 0.0);
}
