#version 450
// Split-K decode attention, pass 2: one workgroup per (token, head) merges the n_split partials
// of attention_split.comp: y = sum_s acc_s * exp(m_s - M) / sum_s l_s * exp(m_s - M), M = max m_s.
// Empty splits (m = -1e30, l = 0) weigh nothing.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform P {
    Floats part; Floats y;
    uint n_tok; uint n_head; uint head_dim; uint n_split;
} p;
void main() {
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * 32768u;  // token * n_head + head
    if (r >= p.n_tok * p.n_head) return;
    const uint hd = p.head_dim, S = p.n_split;
    const uint ml = p.n_tok * p.n_head * S * hd + 2u * r * S;
    float M = -1e30;
    for (uint s = 0u; s < S; ++s) M = max(M, p.part.v[ml + 2u * s]);
    float L = 0.0;
    for (uint s = 0u; s < S; ++s) L += p.part.v[ml + 2u * s + 1u] * exp(p.part.v[ml + 2u * s] - M);
    const float inv = 1.0 / L;
    for (uint d = gl_LocalInvocationID.x; d < hd; d += 64u) {
        float a = 0.0;
        for (uint s = 0u; s < S; ++s) a += p.part.v[(r * S + s) * hd + d] * exp(p.part.v[ml + 2u * s] - M);
        p.y.v[r * hd + d] = a * inv;
    }
}
