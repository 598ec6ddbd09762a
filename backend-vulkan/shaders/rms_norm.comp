#version 450
// One workgroup of WG invocations per group of `group` elements: y = x / rms(x) (* w).
// Decode norms are latency-bound (one 4096-float row): every invocation issues all its loads
// (16-byte when VEC4) before using any, keeps the values in registers for the scaling pass
// (x is read once), and the sum is reduced with subgroupAdd plus one shared slot per subgroup.
// Rows longer than WG * 4 * NREG fall back to a strided loop that reads x twice.
// ADD: the residual add before the norm in the same dispatch (one barrier and dispatch less per
// add): x = x + b is written to s, then normalised.
// Q8: the output is also left as q8 activations (q8_act.glsl) for the int8-dot matvec after the
// norm (register path only, group % 32 == 0, 8 | subgroup size).
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#include "common.glsl"
#include "q8_act.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint SUBGROUP_ADD = 0;  // 1: the device has subgroup arithmetic
layout(constant_id = 2) const uint VEC4 = 0;          // 1: group % 4 == 0 (16-byte aligned rows)
layout(constant_id = 3) const uint ADD = 0;           // 1: s = x + b, y = norm(s)
layout(constant_id = 4) const uint Q8 = 0;            // 1: y also as q8 activations
layout(push_constant) uniform P {
    Floats x; Floats w; Floats y; Floats b; Floats s;
    uint group; uint n_groups; float eps; uint has_w;
    Uints qs; Vec2s ds;  // Q8 only
} p;
const uint NREG = 8u;  // vec4 registers per invocation: rows up to WG * 32 floats in one read
shared float red[WG];

float workgroup_sum(float v, uint tid) {
    if (SUBGROUP_ADD != 0u) {
        v = subgroupAdd(v);
        if (subgroupElect()) red[gl_SubgroupID] = v;
        barrier();
        float s = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; ++i) s += red[i];
        return s;
    }
    red[tid] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        barrier();
    }
    return red[0];
}

void main() {
    const uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * 32768u;
    if (g >= p.n_groups) return;  // uniform over the workgroup
    const uint tid = gl_LocalInvocationID.x, base = g * p.group;
    if (VEC4 != 0u && p.group <= WG * 4u * NREG) {
        const uint n4 = p.group / 4u, b4 = base / 4u;
        Vec4s x = Vec4s(p.x), b = Vec4s(p.b), sum = Vec4s(p.s), w = Vec4s(p.w);
        // The weights are loaded with the row, before the sum's barrier (not one trip after).
        vec4 v[NREG], wv[NREG];
        [[unroll]] for (uint k = 0u; k < NREG; ++k) {
            const uint i = tid + k * WG;
            v[k] = i < n4 ? x.v[b4 + i] : vec4(0.0);
            wv[k] = p.has_w != 0u && i < n4 ? w.v[i] : vec4(1.0);
            if (ADD != 0u && i < n4) v[k] += b.v[b4 + i];
        }
        if (ADD != 0u)
            [[unroll]] for (uint k = 0u; k < NREG; ++k) {
                const uint i = tid + k * WG;
                if (i < n4) sum.v[b4 + i] = v[k];
            }
        float ss = 0.0;
        [[unroll]] for (uint k = 0u; k < NREG; ++k) ss += dot(v[k], v[k]);
        const float scale = inversesqrt(workgroup_sum(ss, tid) / float(p.group) + p.eps);
        Vec4s y = Vec4s(p.y);
        [[unroll]] for (uint k = 0u; k < NREG; ++k) {
            const uint i = tid + k * WG;
            vec4 o = vec4(0.0);
            if (i < n4) {
                o = v[k] * scale * wv[k];
                y.v[b4 + i] = o;
            }
            if (Q8 != 0u) q8_store_vec4(o, b4 + i, i < n4, p.qs, p.ds);
        }
        return;
    }
    float ss = 0.0;
    for (uint i = tid; i < p.group; i += WG) {
        float v = p.x.v[base + i];
        if (ADD != 0u) {
            v += p.b.v[base + i];
            p.s.v[base + i] = v;  // read back below by this same invocation
        }
        ss += v * v;
    }
    const float scale = inversesqrt(workgroup_sum(ss, tid) / float(p.group) + p.eps);
    for (uint i = tid; i < p.group; i += WG) {
        float v = (ADD != 0u ? p.s.v[base + i] : p.x.v[base + i]) * scale;
        p.y.v[base + i] = p.has_w != 0u ? v * p.w.v[i] : v;
    }
}
