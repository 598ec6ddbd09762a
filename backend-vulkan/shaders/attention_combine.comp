#version 450
// Split-K decode attention, pass 2: one workgroup per (token, head) merges the n_split partials
// of attention_split.comp: y = sum_s acc_s * exp(m_s - M) / sum_s l_s * exp(m_s - M), M = max m_s.
// Empty splits (m = -1e30, l = 0) weigh nothing and their rows are not read. Latency first:
// the max and the sum take one barrier each with subgroup arithmetic (SUBGROUP = 1); the
// accumulators are read as vec4s by WG / (head_dim / 4) groups of invocations, each group
// every G-th split, four loads in flight, then summed over the groups through shared memory.
// Q8: the output is also left as q8 activations (q8_act.glsl) for the output projection's
// int8-dot matvec (head_dim % 32 == 0: a head is whole blocks). head_dim % 4 == 0.
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#include "common.glsl"
#include "q8_act.glsl"
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint Q8 = 0;
layout(constant_id = 1) const uint SUBGROUP = 0;  // subgroupMax/Add over whole subgroups
const uint WG = 128u, MAX_SPLIT = 256u, MAX_HD = 256u;
layout(push_constant) uniform P {
    Floats part; Floats y;
    uint n_tok; uint n_head; uint head_dim; uint n_split;
    Uints qs; Vec2s ds;  // Q8 only
} p;
shared float wt[MAX_SPLIT];  // exp(m_s - M)
shared float red[WG];
shared vec4 sums[WG];          // each invocation's share of the accumulators
shared float out_row[MAX_HD];  // Q8: the head's output, read back as vec4s

// Max (is_max) or sum of v over the workgroup, in every invocation.
float workgroup_reduce(float v, uint tid, bool is_max) {
    if (SUBGROUP != 0u) {
        v = is_max ? subgroupMax(v) : subgroupAdd(v);
        if (subgroupElect()) red[gl_SubgroupID] = v;
        barrier();
        float r = red[0];
        for (uint i = 1u; i < gl_NumSubgroups; ++i) r = is_max ? max(r, red[i]) : r + red[i];
        barrier();  // red is reused
        return r;
    }
    red[tid] = v;
    barrier();
    for (uint st = WG / 2u; st > 0u; st >>= 1) {
        if (tid < st) red[tid] = is_max ? max(red[tid], red[tid + st]) : red[tid] + red[tid + st];
        barrier();
    }
    const float r = red[0];
    barrier();
    return r;
}

void main() {
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * 32768u;  // token * n_head + head
    if (r >= p.n_tok * p.n_head) return;
    const uint tid = gl_LocalInvocationID.x, hd = p.head_dim, S = p.n_split;
    const uint ml = p.n_tok * p.n_head * S * hd + 2u * r * S;
    float mx = -1e30;
    for (uint s = tid; s < S; s += WG) mx = max(mx, p.part.v[ml + 2u * s]);
    const float M = workgroup_reduce(mx, tid, true);
    float l = 0.0;
    for (uint s = tid; s < S; s += WG) {
        const float e = exp(p.part.v[ml + 2u * s] - M);
        wt[s] = p.part.v[ml + 2u * s + 1u] > 0.0 ? e : 0.0;
        l += e * p.part.v[ml + 2u * s + 1u];
    }
    const float inv = 1.0 / workgroup_reduce(l, tid, false);  // its barriers publish wt[]
    const uint h4 = hd / 4u, G = WG / h4, c = tid % h4, grp = tid / h4;
    vec4 a = vec4(0.0);
    if (grp < G) {
        const uint row4 = r * S * h4 + c;
        uint s = grp;
        for (; s + 3u * G < S; s += 4u * G) {
            vec4 v[4];
            [[unroll]] for (uint k = 0u; k < 4u; ++k)
                v[k] = wt[s + k * G] != 0.0 ? Vec4s(p.part).v[row4 + (s + k * G) * h4] : vec4(0.0);
            [[unroll]] for (uint k = 0u; k < 4u; ++k) a += v[k] * wt[s + k * G];
        }
        for (; s < S; s += G)
            if (wt[s] != 0.0) a += Vec4s(p.part).v[row4 + s * h4] * wt[s];
    }
    sums[tid] = a;
    barrier();
    if (tid < h4) {
        vec4 o = vec4(0.0);
        for (uint g = 0u; g < G; ++g) o += sums[g * h4 + tid];
        o *= inv;
        [[unroll]] for (uint k = 0u; k < 4u; ++k) {
            p.y.v[r * hd + 4u * tid + k] = o[k];
            if (Q8 != 0u) out_row[4u * tid + k] = o[k];
        }
    }
    if (Q8 != 0u) {
        barrier();
        if (tid < MAX_HD / 4u) {  // whole clusters of 8 lanes
            const bool live = tid < h4;
            const vec4 v = live ? vec4(out_row[4u * tid], out_row[4u * tid + 1u],
                                       out_row[4u * tid + 2u], out_row[4u * tid + 3u])
                                : vec4(0.0);
            q8_store_vec4(v, r * h4 + tid, live, p.qs, p.ds);
        }
    }
}
