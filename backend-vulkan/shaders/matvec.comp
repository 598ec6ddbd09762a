#version 450
// Decode matmul: y[t, o] = W[o, :] . x[t, :] (+ bias[o]) for TOK tokens (1..4) per dispatch.
// A workgroup of WG invocations owns ROWS output rows; each row gets TPR = WG / ROWS
// invocations (whole subgroups when SUBGROUP_ADD is set). The activations are staged in shared
// memory a chunk of TPR * GPT 32-element groups at a time (GPT groups per invocation, so each
// has several independent weight loads in flight) (padded by one float per group, so lanes
// reading consecutive groups hit different banks) and reused by every row of the workgroup;
// each invocation dequantises whole groups (dq_group: word loads, one pass over its bytes).
// Partial sums: subgroupAdd, then one shared slot per subgroup; or a shared-memory tree.
// PARTS = 2 or 3: consecutive matrices reading the same x (q/k/v, gate/up) in one dispatch; their
// rows are numbered one after the other (w/y/n_out, then w1/y1/n_out1, then w2/y2/n_out2), and a
// row takes its own matrix's weights and output (a workgroup may straddle two). No bias then.
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
layout(constant_id = 5) const uint PARTS = 1;
layout(constant_id = 6) const uint GPT = 2u;  // groups per invocation per chunk
layout(push_constant) uniform P {
    Uints w; Floats x; Floats y; Floats bias;
    uint n_in; uint n_out; uint n_tok; uint row_bytes; uint has_bias;
    Uints w1; Uints w2; Floats y1; Floats y2; uint n_out1; uint n_out2;  // PARTS > 1 only
} p;
const uint TPR = WG / ROWS;
const uint CG = TPR * GPT;  // groups per chunk
const uint XS = CG * 33u;   // one chunk of one token: CG groups of 32 floats + 1 pad each
shared float xs[TOK * XS];
shared float red[TOK * WG];

void main() {
    const uint tid = gl_LocalInvocationID.x, r = tid / TPR, lane = tid % TPR;
    uint o = (gl_WorkGroupID.x + gl_WorkGroupID.z * 32768u) * ROWS + r;
    uint n_out = p.n_out;
    Uints w = p.w;
    Floats y = p.y;
    if (PARTS > 1u && o >= n_out) {
        o -= n_out;
        n_out = p.n_out1;
        w = p.w1;
        y = p.y1;
        if (PARTS > 2u && o >= n_out) {
            o -= n_out;
            n_out = p.n_out2;
            w = p.w2;
            y = p.y2;
        }
    }
    const uint t0 = gl_WorkGroupID.y * TOK;
    const uint nt = min(TOK, p.n_tok - t0);
    const bool live = o < n_out;
    const uint ro = live ? o * p.row_bytes : 0u;
    float acc[TOK];
    [[unroll]] for (uint k = 0u; k < TOK; ++k) acc[k] = 0.0;

    const bool groups = p.n_in % 32u == 0u;
    for (uint c0 = 0u; c0 < p.n_in; c0 += CG * 32u) {
        const uint ce = min(CG * 32u, p.n_in - c0);  // elements in this chunk
        for (uint k = 0u; k < TOK; ++k)
            for (uint i = tid; i < CG * 32u; i += WG)
                xs[k * XS + i + (i >> 5)] = k < nt && i < ce ? p.x.v[(t0 + k) * p.n_in + c0 + i] : 0.0;
        barrier();
        if (live) {
            if (groups) {
                [[unroll]] for (uint j = 0u; j < GPT; ++j) {
                    const uint gl = lane + j * TPR;  // group within the chunk
                    if (gl * 32u < ce) {
                        float v[32];
                        dq_group(TYPE, w, ro, (c0 >> 5) + gl, v);
                        [[unroll]] for (uint k = 0u; k < TOK; ++k) {
                            float s = 0.0;
                            [[unroll]] for (uint e = 0u; e < 32u; ++e) s += v[e] * xs[k * XS + gl * 33u + e];
                            acc[k] += s;
                        }
                    }
                }
            } else {  // f32/f16/bf16 rows of any length: element by element
                for (uint i = lane; i < ce; i += TPR) {
                    const float wv = dq(TYPE, w, ro, c0 + i);
                    [[unroll]] for (uint k = 0u; k < TOK; ++k) acc[k] += wv * xs[k * XS + i + (i >> 5)];
                }
            }
        }
        barrier();
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
            y.v[(t0 + k) * n_out + o] = s;
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
            y.v[(t0 + k) * n_out + o] = s;
        }
    }
}
