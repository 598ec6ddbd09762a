#version 450
// Embedding lookup: one workgroup per token dequantises row ids[t] of the table.
#include "common.glsl"
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint TYPE = 0;
layout(push_constant) uniform P { Uints w; Ints ids; Floats y; uint n_embd; uint row_bytes; } p;
void main() {
    const uint t = gl_WorkGroupID.x + gl_WorkGroupID.y * 32768u;
    const uint ro = uint(p.ids.v[t]) * p.row_bytes;
    for (uint i = gl_LocalInvocationID.x; i < p.n_embd; i += 128u)
        p.y.v[t * p.n_embd + i] = dq(TYPE, p.w, ro, i);
}
