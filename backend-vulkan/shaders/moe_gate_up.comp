#version 450
// First half of the expert FFN: h[t*k + j, f] = act(gate_e[f] . x[t]) * (up_e[f] . x[t]) for
// the expert e chosen in slot j of token t; zero when e is not held by this rank.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint GATE_TYPE = 0;
layout(constant_id = 1) const uint UP_TYPE = 0;
layout(push_constant) uniform P {
    Uints gate; Uints up; Floats x; Floats route; Floats h;
    uint n_embd; uint n_ff; uint k; uint first_expert; uint n_local;
    uint gate_row_bytes; uint up_row_bytes; uint act_id;
} p;
shared float red_g[64];
shared float red_u[64];
void main() {
    const uint f = gl_WorkGroupID.x + gl_WorkGroupID.z * 32768u;
    if (f >= p.n_ff) return;
    const uint slot = gl_WorkGroupID.y, t = slot / p.k, j = slot % p.k, tid = gl_LocalInvocationID.x;
    const int le = int(p.route.v[t * 2u * p.k + 2u * j]) - int(p.first_expert);
    if (le < 0 || le >= int(p.n_local)) {
        if (tid == 0u) p.h.v[slot * p.n_ff + f] = 0.0;
        return;
    }
    const uint go = (uint(le) * p.n_ff + f) * p.gate_row_bytes;
    const uint uo = (uint(le) * p.n_ff + f) * p.up_row_bytes;
    float g = 0.0, u = 0.0;
    for (uint i = tid; i < p.n_embd; i += 64u) {
        const float xv = p.x.v[t * p.n_embd + i];
        g += dq(GATE_TYPE, p.gate, go, i) * xv;
        u += dq(UP_TYPE, p.up, uo, i) * xv;
    }
    red_g[tid] = g;
    red_u[tid] = u;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (tid < s) { red_g[tid] += red_g[tid + s]; red_u[tid] += red_u[tid + s]; }
        barrier();
    }
    if (tid == 0u) p.h.v[slot * p.n_ff + f] = act(p.act_id, red_g[0]) * red_u[0];
}
