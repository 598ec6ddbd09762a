#version 450
// Split-K decode attention, pass 2: one workgroup per (token, head) merges the n_split partials
// of attention_split.comp: y = sum_s acc_s * exp(m_s - M) / sum_s l_s * exp(m_s - M), M = max m_s.
// Empty splits (m = -1e30, l = 0) weigh nothing. The split weights are computed once, in
// parallel, into shared memory; each invocation then sums its dimension over the splits 8 at a
// time (8 independent loads in flight: a serial loop here cost ~30 us on an H200).
// Q8: the output is also left as q8 activations (q8_act.glsl) for the output projection's
// int8-dot matvec (head_dim % 32 == 0: a head is whole blocks).
#extension GL_KHR_shader_subgroup_basic : enable
#include "common.glsl"
#include "q8_act.glsl"
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint Q8 = 0;
const uint WG = 128u, MAX_SPLIT = 256u, MAX_HD = 256u;
layout(push_constant) uniform P {
    Floats part; Floats y;
    uint n_tok; uint n_head; uint head_dim; uint n_split;
    Uints qs; Vec2s ds;  // Q8 only
} p;
shared float wt[MAX_SPLIT];  // exp(m_s - M), then divided by L
shared float red[WG];
shared float out_row[MAX_HD];  // Q8: the head's output, read back as vec4s

void main() {
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * 32768u;  // token * n_head + head
    if (r >= p.n_tok * p.n_head) return;
    const uint tid = gl_LocalInvocationID.x, hd = p.head_dim, S = p.n_split;
    const uint ml = p.n_tok * p.n_head * S * hd + 2u * r * S;
    float mx = -1e30;
    for (uint s = tid; s < S; s += WG) mx = max(mx, p.part.v[ml + 2u * s]);
    red[tid] = mx;
    barrier();
    for (uint st = WG / 2u; st > 0u; st >>= 1) {
        if (tid < st) red[tid] = max(red[tid], red[tid + st]);
        barrier();
    }
    const float M = red[0];
    barrier();
    float l = 0.0;
    for (uint s = tid; s < S; s += WG) {
        const float e = exp(p.part.v[ml + 2u * s] - M);
        wt[s] = e;
        l += e * p.part.v[ml + 2u * s + 1u];
    }
    red[tid] = l;
    barrier();
    for (uint st = WG / 2u; st > 0u; st >>= 1) {
        if (tid < st) red[tid] += red[tid + st];
        barrier();
    }
    const float inv = 1.0 / red[0];
    for (uint d = tid; d < hd; d += WG) {
        const uint base = r * S * hd + d;
        float a = 0.0;
        uint s = 0u;
        for (; s + 8u <= S; s += 8u) {
            float v[8];
            [[unroll]] for (uint k = 0u; k < 8u; ++k) v[k] = p.part.v[base + (s + k) * hd];
            [[unroll]] for (uint k = 0u; k < 8u; ++k) a += v[k] * wt[s + k];
        }
        for (; s < S; ++s) a += p.part.v[base + s * hd] * wt[s];
        p.y.v[r * hd + d] = a * inv;
        if (Q8 != 0u) out_row[d] = a * inv;
    }
    if (Q8 != 0u) {
        barrier();
        if (tid < MAX_HD / 4u) {  // whole clusters of 8 lanes
            const uint i = tid;
            const bool live = i < hd / 4u;
            const vec4 v = live ? vec4(out_row[4u * i], out_row[4u * i + 1u], out_row[4u * i + 2u],
                                       out_row[4u * i + 3u])
                                : vec4(0.0);
            q8_store_vec4(v, r * (hd / 4u) + i, live, p.qs, p.ds);
        }
    }
}
