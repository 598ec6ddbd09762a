#version 450
// y[t, o] = W[o, :] . x[t, :] (+ bias[o]). One workgroup per output row and tile of TILE tokens:
// the weight row is dequantised once per tile (decode: one token, one pass over the weights).
#include "common.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint TYPE = 0;
const uint TILE = 4u;
layout(push_constant) uniform P {
    Uints w; Floats x; Floats y; Floats bias;
    uint n_in; uint n_out; uint n_tok; uint row_bytes; uint has_bias;
} p;
shared float red[TILE][64];
void main() {
    const uint o = gl_WorkGroupID.x + gl_WorkGroupID.z * 32768u;
    if (o >= p.n_out) return;
    const uint t0 = gl_WorkGroupID.y * TILE, tid = gl_LocalInvocationID.x;
    const uint nt = min(TILE, p.n_tok - t0);
    float acc[TILE];
    for (uint k = 0u; k < TILE; ++k) acc[k] = 0.0;
    const uint ro = o * p.row_bytes;
    if (TYPE == T_F32 || TYPE == T_F16 || TYPE == T_BF16) {
        for (uint i = tid; i < p.n_in; i += 64u) {
            const float wv = dq(TYPE, p.w, ro, i);
            for (uint k = 0u; k < nt; ++k) acc[k] += wv * p.x.v[(t0 + k) * p.n_in + i];
        }
    } else {
        // Quantised rows are whole 32-element groups (a block, or a K-quant sub-block): one
        // group per invocation, unrolled, so the compiler reads its scales and words once.
        for (uint c = tid; c < p.n_in / 32u; c += 64u) {
            [[unroll]] for (uint e = 0u; e < 32u; ++e) {
                const uint i = c * 32u + e;
                const float wv = dq(TYPE, p.w, ro, i);
                for (uint k = 0u; k < nt; ++k) acc[k] += wv * p.x.v[(t0 + k) * p.n_in + i];
            }
        }
    }
    for (uint k = 0u; k < TILE; ++k) red[k][tid] = acc[k];
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1) {
        if (tid < s)
            for (uint k = 0u; k < TILE; ++k) red[k][tid] += red[k][tid + s];
        barrier();
    }
    if (tid < nt) {
        float r = red[tid][0];
        if (p.has_bias != 0u) r += p.bias.v[o];
        p.y.v[(t0 + tid) * p.n_out + o] = r;
    }
}
