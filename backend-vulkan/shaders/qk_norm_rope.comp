#version 450
// Qwen3's and Gemma 3's attention inputs in one dispatch (core's match_qk_norm_rope): each head
// of q and k normed (RMSNorm over head_dim with its weights), roped with the host's (cos, sin)
// table, q written and k stored into the K cache; each head of v stored into the V cache. In
// place of five dispatches and their barriers.
// One workgroup for the step's one token: every head of q, k and v is read into shared memory
// before anything is written, so the roped q may take memory q or k held (the planner gives it
// theirs once the norms have read them). Then group g (64 invocations) takes heads g,
// g + WG / 64, ... of q and k. A head is normed as rms_norm.comp norms it at its per-head workgroup of 64 (the
// same registers, sum and scaling) and rotated as rope.comp rotates it, so the results are the
// same bits as the separate dispatches.
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#include "common.glsl"
layout(local_size_x_id = 2) in;
layout(constant_id = 0) const uint SUBGROUP_ADD = 0;  // 1: subgroups of at most 64 dividing 64
layout(constant_id = 1) const uint F16 = 1;           // the caches' type: f16 pairs, or f32
layout(constant_id = 2) const uint WG = 1024;         // a multiple of 64
layout(constant_id = 3) const uint SH = 2816;         // vec4s of q, k and v: the token's
layout(push_constant) uniform P {
    Vec4s q; Vec4s k; Vec4s v; Vec4s qw; Vec4s kw; Floats table; Vec4s q_out;
    Uints k_cache; Uints v_cache; Uints step;  // step.v[0] = n_past
    uint n_head; uint n_kv_head; uint head_dim; uint neox; float eps; uint has_qw; uint has_kw;
} p;
const uint GROUP = 64u, NGROUPS = WG / GROUP, NREG = 8u;
shared vec4 sh[SH];  // the token's q, k and v
shared float red[WG];

// rms_norm.comp's workgroup_sum over group g's 64 invocations (j: the invocation in it).
float group_sum(float v, uint g, uint j) {
    if (SUBGROUP_ADD != 0u) {
        v = subgroupAdd(v);
        if (subgroupElect()) red[gl_SubgroupID] = v;
        barrier();
        const uint per = GROUP / gl_SubgroupSize;
        float s = 0.0;
        for (uint i = 0u; i < per; ++i) s += red[g * per + i];
        return s;
    }
    red[g * GROUP + j] = v;
    barrier();
    for (uint s = GROUP / 2u; s > 0u; s >>= 1) {
        if (j < s) red[g * GROUP + j] += red[g * GROUP + j + s];
        barrier();
    }
    return red[g * GROUP];
}

void store_pair(Uints cache, uint at, float a, float b) {
    if (F16 != 0u) {
        cache.v[at / 2u] = packHalf2x16(vec2(a, b));
    } else {
        cache.v[at] = floatBitsToUint(a);
        cache.v[at + 1u] = floatBitsToUint(b);
    }
}

// Element e of the normed head at vec4 base hb (rope.comp's rotated(), the whole head rotated).
float rotated(uint hb, uint e) {
    const uint half_rot = p.head_dim / 2u;
    uint i, i0, i1;
    bool second;
    if (p.neox != 0u) {
        second = e >= half_rot;
        i = second ? e - half_rot : e;
        i0 = i;
        i1 = i + half_rot;
    } else {
        second = (e & 1u) != 0u;
        i = e / 2u;
        i0 = 2u * i;
        i1 = i0 + 1u;
    }
    const vec2 cs = vec2(p.table.v[i * 2u], p.table.v[i * 2u + 1u]);
    const float x0 = sh[hb + i0 / 4u][i0 % 4u], x1 = sh[hb + i1 / 4u][i1 % 4u];
    return second ? x0 * cs.y + x1 * cs.x : x0 * cs.x - x1 * cs.y;
}

void main() {
    const uint tid = gl_LocalInvocationID.x, g = tid / GROUP, j = tid % GROUP;
    const uint hd = p.head_dim, h4 = hd / 4u, nq4 = p.n_head * h4, nk4 = p.n_kv_head * h4;
    for (uint i = tid; i < nq4 + 2u * nk4; i += WG)
        sh[i] = i < nq4 ? p.q.v[i] : i < nq4 + nk4 ? p.k.v[i - nq4] : p.v.v[i - nq4 - nk4];
    const uint row = p.step.v[0];  // the cache row of the token
    barrier();
    const uint heads = p.n_head + p.n_kv_head;
    for (uint base = 0u; base < heads; base += NGROUPS) {  // uniform: barriers inside
        const uint h = base + g;
        const bool is_q = h < p.n_head, live = h < heads;
        const uint hb = is_q ? h * h4 : nq4 + (h - p.n_head) * h4;
        Vec4s w = is_q ? p.qw : p.kw;
        const bool has_w = (is_q ? p.has_qw : p.has_kw) != 0u;
        vec4 x[NREG];
        [[unroll]] for (uint k = 0u; k < NREG; ++k) {
            const uint i = j + k * GROUP;
            x[k] = live && i < h4 ? sh[hb + i] : vec4(0.0);
        }
        const vec4 wv = live && has_w && j < h4 ? w.v[j] : vec4(1.0);
        float ss = 0.0;
        [[unroll]] for (uint k = 0u; k < NREG; ++k) ss += dot(x[k], x[k]);
        const float scale = inversesqrt(group_sum(ss, g, j) / float(hd) + p.eps);
        barrier();  // every group has read its head (and red) before the normed values land
        if (live && j < h4) sh[hb + j] = x[0] * scale * wv;
        barrier();
        for (uint e2 = j; live && e2 < hd / 2u; e2 += GROUP) {
            const float a = rotated(hb, 2u * e2), b = rotated(hb, 2u * e2 + 1u);
            if (is_q) {
                const uint at = h * hd + 2u * e2;
                Floats(p.q_out).v[at] = a;
                Floats(p.q_out).v[at + 1u] = b;
            } else {
                store_pair(p.k_cache, (row * p.n_kv_head + h - p.n_head) * hd + 2u * e2, a, b);
            }
        }
        barrier();  // red and the normed head are written again by the next round
    }
    for (uint i = tid; i < nk4; i += WG) {
        const vec4 x = sh[nq4 + nk4 + i];
        store_pair(p.v_cache, row * p.n_kv_head * hd + 4u * i, x.x, x.y);
        store_pair(p.v_cache, row * p.n_kv_head * hd + 4u * i + 2u, x.z, x.w);
    }
}
