#version 450
// y[t, o] = the sum over the token's slots held here of ys[t k + j, o] (already weighted), in
// slot order: the prefill down projection's slots (moe_q8.comp) added without atomics.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform P { Floats ys; Floats route; Floats y; uint n; uint n_embd; uint k; uint first; uint n_local; } p;
#include "moe_slots.glsl"
void main() {
    const uint i = (gl_WorkGroupID.x + gl_WorkGroupID.z * 32768u) * 256u + gl_LocalInvocationID.x;
    if (i >= p.n) return;
    const uint t = i / p.n_embd, o = i % p.n_embd;
    float v = 0.0;
    for (uint j = 0u; j < p.k; ++j) {
        const uint slot = t * p.k + j;
        if (slot_expert(slot) >= 0) v += p.ys.v[slot * p.n_embd + o];
    }
    p.y.v[i] = v;
}
