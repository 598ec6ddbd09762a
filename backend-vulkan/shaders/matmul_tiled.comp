#version 450
// Prefill matmul: y[t, o] = W[o, :] . x[t, :] (+ bias[o]) in tiles of 64 rows x 64 tokens, so
// each weight group is dequantised once per 64 tokens (compute-bound, not T passes over the
// weights). Per step of 32 input elements, invocations 0..63 dequantise one group of one row
// each into shared memory, all 256 stage the 64 tokens' activations, and each invocation then
// accumulates a 4x4 block of outputs (rows tx + 16i, tokens ty + 16j) from the two tiles.
// Rows must be whole 32-element groups (the host uses matvec otherwise). k_groups (0: all): the
// groups a split sums; split z = gl_WorkGroupID.z takes groups [z k_groups, (z + 1) k_groups)
// into y + z n_tok n_out, which split_sum.comp adds (with the bias) where there are several.
#include "common.glsl"
#include "dq_group.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TYPE = 0;
layout(push_constant) uniform P {
    Uints w; Floats x; Floats y; Floats bias;
    uint n_in; uint n_out; uint n_tok; uint row_bytes; uint has_bias; uint k_groups;
} p;
const uint BM = 64u, BN = 64u, LD = 33u;  // LD: padded row of a tile (no bank conflicts)
shared float ws[BM * LD];                 // [row][element] of the current group
shared float xt[BN * LD];                 // [token][element]

void main() {
    const uint tid = gl_LocalInvocationID.x, tx = tid % 16u, ty = tid / 16u;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    float acc[4][4];
    [[unroll]] for (uint i = 0u; i < 4u; ++i)
        [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
    const uint n_groups = p.n_in / 32u;
    const uint my_row = m0 + tid;  // the row this invocation dequantises (tid < 64)
    const uint z = gl_WorkGroupID.z, kg = p.k_groups == 0u ? n_groups : p.k_groups;
    const uint y0 = z * p.n_tok * p.n_out;  // this split's part of y
    for (uint g = z * kg; g < min(n_groups, (z + 1u) * kg); ++g) {
        if (tid < BM) {
            float v[32];
            if (my_row < p.n_out) {
                dq_group(TYPE, p.w, my_row * p.row_bytes, g, v);
            } else {
                [[unroll]] for (uint e = 0u; e < 32u; ++e) v[e] = 0.0;
            }
            [[unroll]] for (uint e = 0u; e < 32u; ++e) ws[tid * LD + e] = v[e];
        }
        // 64 tokens x 32 elements: 8 per invocation, consecutive invocations on one token row.
        [[unroll]] for (uint k = 0u; k < 8u; ++k) {
            const uint i = tid + k * 256u, tok = i / 32u, e = i % 32u;
            const uint t = n0 + tok;
            xt[tok * LD + e] = t < p.n_tok ? p.x.v[t * p.n_in + g * 32u + e] : 0.0;
        }
        barrier();
        [[unroll]] for (uint e = 0u; e < 32u; ++e) {
            float a[4], b[4];
            [[unroll]] for (uint i = 0u; i < 4u; ++i) a[i] = ws[(tx + 16u * i) * LD + e];
            [[unroll]] for (uint j = 0u; j < 4u; ++j) b[j] = xt[(ty + 16u * j) * LD + e];
            [[unroll]] for (uint i = 0u; i < 4u; ++i)
                [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] += a[i] * b[j];
        }
        barrier();
    }
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        const uint o = m0 + tx + 16u * i;
        if (o >= p.n_out) continue;
        const float bias = p.has_bias != 0u ? p.bias.v[o] : 0.0;
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
            const uint t = n0 + ty + 16u * j;
            if (t < p.n_tok) p.y.v[y0 + t * p.n_out + o] = acc[i][j] + bias;
        }
    }
}
