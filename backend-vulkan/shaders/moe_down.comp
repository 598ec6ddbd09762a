#version 450
// Second half of the expert FFN: y[t, o] = sum_j w_j * (down_e[o] . h[t*k + j]) over the
// token's experts held here; the sum over slots stays in the workgroup (no atomics).
#include "common.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint TYPE = 0;
layout(push_constant) uniform P {
    Uints down; Floats h; Floats route; Floats y;
    uint n_ff; uint n_embd; uint k; uint first_expert; uint n_local; uint row_bytes;
} p;
shared float red[64];
void main() {
    const uint o = gl_WorkGroupID.x + gl_WorkGroupID.z * 32768u;
    if (o >= p.n_embd) return;
    const uint t = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
    float acc = 0.0;
    for (uint j = 0u; j < p.k; ++j) {
        const int le = int(p.route.v[t * 2u * p.k + 2u * j]) - int(p.first_expert);
        if (le < 0 || le >= int(p.n_local)) continue;
        const float wgt = p.route.v[t * 2u * p.k + 2u * j + 1u];
        const uint ro = (uint(le) * p.n_embd + o) * p.row_bytes;
        const uint hb = (t * p.k + j) * p.n_ff;
        float d = 0.0;
        for (uint i = tid; i < p.n_ff; i += 64u) d += dq(TYPE, p.down, ro, i) * p.h.v[hb + i];
        acc += wgt * d;
    }
    red[tid] = acc;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        barrier();
    }
    if (tid == 0u) p.y.v[t * p.n_embd + o] = red[0];
}
