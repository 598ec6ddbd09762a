#version 450
// Softmax gating and top-k per token: a workgroup of 64 per token, invocation i holding the
// logits of experts i, i + 64, ... (up to 512 experts; more take moe_route_serial.comp, whose
// results these are: the k largest logits by repeated arg-max, ties to the lower expert id as
// the CPU backend and torch.topk, weights exp(l - max) / sum in f32).
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#include "common.glsl"
layout(local_size_x = 64) in;
// 1: the reductions by subgroup operations, then one shared slot per subgroup (the device has
// subgroup arithmetic in subgroups that divide 64); 0: trees through shared memory.
layout(constant_id = 0) const uint SUBGROUP = 0;
layout(push_constant) uniform P { Floats logits; Floats route; uint n_tok; uint n_expert; uint k; uint normalize; } p;
const uint WG = 64u, PER = 8u;
const uint NONE = 0xFFFFFFFFu;
shared float sv[WG];
shared uint si[WG];

// (v, e) or (ov, oe), whichever wins: the larger logit, ties to the lower id; NONE loses.
void take_better(inout float v, inout uint e, float ov, uint oe) {
    if (oe != NONE && (e == NONE || ov > v || (ov == v && oe < e))) v = ov, e = oe;
}

float max_all(float v, uint tid) {
    if (SUBGROUP != 0u) {
        v = subgroupMax(v);
        if (subgroupElect()) sv[gl_SubgroupID] = v;
        barrier();
        float m = sv[0];
        for (uint i = 1u; i < gl_NumSubgroups; ++i) m = max(m, sv[i]);
        barrier();
        return m;
    }
    sv[tid] = v;
    barrier();
    for (uint st = WG / 2u; st > 0u; st >>= 1) {
        if (tid < st) sv[tid] = max(sv[tid], sv[tid + st]);
        barrier();
    }
    const float m = sv[0];
    barrier();
    return m;
}

float sum_all(float v, uint tid) {
    if (SUBGROUP != 0u) {
        v = subgroupAdd(v);
        if (subgroupElect()) sv[gl_SubgroupID] = v;
        barrier();
        float s = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; ++i) s += sv[i];
        barrier();
        return s;
    }
    sv[tid] = v;
    barrier();
    for (uint st = WG / 2u; st > 0u; st >>= 1) {
        if (tid < st) sv[tid] += sv[tid + st];
        barrier();
    }
    const float s = sv[0];
    barrier();
    return s;
}

// Every invocation's (v, e) -> the workgroup's winner, in every invocation.
void best_all(inout float v, inout uint e, uint tid) {
    if (SUBGROUP != 0u) {
        const float m = subgroupMax(e == NONE ? -3.4e38 : v);
        const uint me = subgroupMin(e != NONE && v == m ? e : NONE);
        if (subgroupElect()) sv[gl_SubgroupID] = m, si[gl_SubgroupID] = me;
        barrier();
        v = sv[0], e = si[0];
        for (uint i = 1u; i < gl_NumSubgroups; ++i) take_better(v, e, sv[i], si[i]);
        barrier();
        return;
    }
    sv[tid] = v;
    si[tid] = e;
    barrier();
    for (uint st = WG / 2u; st > 0u; st >>= 1) {
        if (tid < st) {
            float bv = sv[tid];
            uint bi = si[tid];
            take_better(bv, bi, sv[tid + st], si[tid + st]);
            sv[tid] = bv, si[tid] = bi;
        }
        barrier();
    }
    v = sv[0], e = si[0];
    barrier();
}

void main() {
    const uint t = gl_WorkGroupID.x + gl_WorkGroupID.z * 32768u, tid = gl_LocalInvocationID.x;
    if (t >= p.n_tok) return;  // the whole workgroup
    const uint lb = t * p.n_expert;
    float lv[PER];
    float mx = -1e30;
    [[unroll]] for (uint j = 0u; j < PER; ++j) {
        const uint e = tid + j * WG;
        lv[j] = e < p.n_expert ? p.logits.v[lb + e] : -1e30;
        mx = max(mx, lv[j]);
    }
    mx = max_all(mx, tid);
    float sum = 0.0;
    [[unroll]] for (uint j = 0u; j < PER; ++j)
        if (tid + j * WG < p.n_expert) sum += exp(lv[j] - mx);
    sum = sum_all(sum, tid);
    uint taken = 0u;  // bit j: expert tid + j * WG chosen
    float wsum = 0.0, my_l = 0.0;
    uint my_e = 0u;
    for (uint j = 0u; j < p.k; ++j) {
        float bv = 0.0;
        uint be = NONE;
        [[unroll]] for (uint i = 0u; i < PER; ++i) {
            const uint e = tid + i * WG;
            if (e < p.n_expert && (taken & (1u << i)) == 0u && (be == NONE || lv[i] > bv))
                bv = lv[i], be = e;
        }
        best_all(bv, be, tid);
        if (be == NONE) break;  // NaN logits only
        if (be % WG == tid) taken |= 1u << (be / WG);
        if (tid == j) my_l = bv, my_e = be;
        wsum += exp(bv - mx) / sum;
    }
    if (tid < p.k) {
        const float pr = exp(my_l - mx) / sum;
        p.route.v[t * 2u * p.k + 2u * tid] = float(my_e);
        p.route.v[t * 2u * p.k + 2u * tid + 1u] = p.normalize != 0u ? pr / wsum : pr;
    }
}
