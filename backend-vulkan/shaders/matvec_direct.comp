#version 450
// Decode matmul without shared-memory staging: y[t, o] = W[o, :] . x[t, :] (+ bias[o]) for TOK
// tokens per dispatch, rows of whole 32-element groups. A workgroup of WG invocations owns ROWS
// rows, TPR = WG / ROWS invocations per row; each invocation walks the row's groups with stride
// TPR, UNROLL groups per step with every weight load of the step issued before the first FMA
// (dq_group, branch-free: a step's last groups are clamped and weighted 0) and reads the
// activations straight from memory as 16-byte loads (the same x for every row: L1 hits). No
// barrier until the final reduction, where matvec.comp waits for each staged chunk.
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#include "common.glsl"
#include "dq_group.glsl"
layout(local_size_x_id = 1) in;
layout(constant_id = 0) const uint TYPE = 0;
layout(constant_id = 1) const uint WG = 128;
layout(constant_id = 2) const uint ROWS = 2;
layout(constant_id = 3) const uint TOK = 1;
layout(constant_id = 4) const uint SUBGROUP_ADD = 0;  // 1: TPR is a multiple of the subgroup size
layout(push_constant) uniform P {
    Uints w; Floats x; Floats y; Floats bias;
    uint n_in; uint n_out; uint n_tok; uint row_bytes; uint has_bias;
} p;
const uint TPR = WG / ROWS, UNROLL = 2u;
shared float red[TOK * WG];

void main() {
    const uint tid = gl_LocalInvocationID.x, r = tid / TPR, lane = tid % TPR;
    const uint o = (gl_WorkGroupID.x + gl_WorkGroupID.z * 32768u) * ROWS + r;
    const uint t0 = gl_WorkGroupID.y * TOK;
    const uint nt = min(TOK, p.n_tok - t0);
    const bool live = o < p.n_out;
    const uint ro = live ? o * p.row_bytes : 0u;
    const uint ng = p.n_in / 32u;
    Vec4s x = Vec4s(p.x);
    float acc[TOK];
    [[unroll]] for (uint k = 0u; k < TOK; ++k) acc[k] = 0.0;
    if (live)
        for (uint g0 = lane; g0 < ng; g0 += UNROLL * TPR) {
            float v[UNROLL][32];
            float keep[UNROLL];
            uint gs[UNROLL];
            [[unroll]] for (uint j = 0u; j < UNROLL; ++j) {
                const uint g = g0 + j * TPR;
                keep[j] = g < ng ? 1.0 : 0.0;
                gs[j] = min(g, ng - 1u);
                dq_group(TYPE, p.w, ro, gs[j], v[j]);
            }
            [[unroll]] for (uint k = 0u; k < TOK; ++k) {
                if (k >= nt) break;
                [[unroll]] for (uint j = 0u; j < UNROLL; ++j) {
                    const uint xb = ((t0 + k) * p.n_in + gs[j] * 32u) >> 2;
                    float s = 0.0;
                    [[unroll]] for (uint e = 0u; e < 8u; ++e) {
                        const vec4 xv = x.v[xb + e];
                        s += v[j][4u * e] * xv.x + v[j][4u * e + 1u] * xv.y +
                             v[j][4u * e + 2u] * xv.z + v[j][4u * e + 3u] * xv.w;
                    }
                    acc[k] += s * keep[j];
                }
            }
        }

    if (SUBGROUP_ADD != 0u) {
        const uint per_row = TPR / gl_SubgroupSize;  // subgroups per row
        [[unroll]] for (uint k = 0u; k < TOK; ++k) {
            const float s = subgroupAdd(acc[k]);
            if (subgroupElect()) red[k * WG + gl_SubgroupID] = s;
        }
        barrier();
        for (uint k = lane; k < nt && live; k += TPR) {
            float s = 0.0;
            for (uint j = 0u; j < per_row; ++j) s += red[k * WG + r * per_row + j];
            if (p.has_bias != 0u) s += p.bias.v[o];
            p.y.v[(t0 + k) * p.n_out + o] = s;
        }
    } else {
        [[unroll]] for (uint k = 0u; k < TOK; ++k) red[k * WG + tid] = acc[k];
        barrier();
        for (uint st = TPR / 2u; st > 0u; st >>= 1) {
            if (lane < st)
                [[unroll]] for (uint k = 0u; k < TOK; ++k) red[k * WG + tid] += red[k * WG + tid + st];
            barrier();
        }
        for (uint k = lane; k < nt && live; k += TPR) {
            float s = red[k * WG + r * TPR];
            if (p.has_bias != 0u) s += p.bias.v[o];
            p.y.v[(t0 + k) * p.n_out + o] = s;
        }
    }
}
