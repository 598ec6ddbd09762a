#version 450
// Rotary embedding: one invocation per (token, head, pair of adjacent output elements 2j,
// 2j+1); each output element is computed from its rotation pair (neighbours, or i and
// i + n_rot/2 in NeoX mode), and dimensions past n_rot are copied. cos/sin come from a table the
// host computed in double precision from the step's positions (has_table), else from float
// angles here. STORE = 1 (f32) / 2 (f16): the rows also go into a KV cache at row n_past + t
// (the K cache after the K rope: one dispatch and one barrier less per layer), the adjacent pair
// as one 32-bit word.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint STORE = 0;
layout(push_constant) uniform P {
    Floats x; Ints pos; Floats ff; Floats y; Floats table;
    uint n_tok; uint n_head; uint head_dim; uint n_rot; uint neox; uint has_ff; uint has_table;
    float freq_base; float freq_scale;
    Uints cache; Uints step;  // STORE only: step.v[0] = n_past
} p;

// cos and sin of rotation pair i of token t.
vec2 cos_sin(uint t, uint i) {
    const uint half_rot = p.n_rot / 2u;
    if (p.has_table != 0u)
        return vec2(p.table.v[(t * half_rot + i) * 2u], p.table.v[(t * half_rot + i) * 2u + 1u]);
    float inv = pow(p.freq_base, -2.0 * float(i) / float(p.n_rot));
    if (p.has_ff != 0u) inv /= p.ff.v[i];
    float a = float(p.pos.v[t]) * p.freq_scale * inv;
    // GPU sin/cos are only accurate near [-pi, pi]; positions reach thousands of radians.
    a -= 6.2831853071795865 * floor(a / 6.2831853071795865 + 0.5);
    return vec2(cos(a), sin(a));
}

// Output element e of the head starting at x[base].
float rotated(uint t, uint base, uint e) {
    if (e >= p.n_rot) return p.x.v[base + e];
    const uint half_rot = p.n_rot / 2u;
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
    const vec2 cs = cos_sin(t, i);
    const float x0 = p.x.v[base + i0], x1 = p.x.v[base + i1];
    return second ? x0 * cs.y + x1 * cs.x : x0 * cs.x - x1 * cs.y;
}

void main() {
    const uint r = gl_WorkGroupID.y + gl_WorkGroupID.z * 32768u;  // token * n_head + head
    if (r >= p.n_tok * p.n_head) return;
    const uint t = r / p.n_head, base = r * p.head_dim;
    for (uint j = gl_LocalInvocationID.x; j < p.head_dim / 2u; j += 64u) {
        const float a = rotated(t, base, 2u * j), b = rotated(t, base, 2u * j + 1u);
        p.y.v[base + 2u * j] = a;
        p.y.v[base + 2u * j + 1u] = b;
        if (STORE != 0u) {
            // cache row n_past + t holds the token's n_head * head_dim values, as this row.
            const uint at = (p.step.v[0] * p.n_head + r) * p.head_dim + 2u * j;
            if (STORE == 2u) {
                p.cache.v[at / 2u] = packHalf2x16(vec2(a, b));
            } else {
                p.cache.v[at] = floatBitsToUint(a);
                p.cache.v[at + 1u] = floatBitsToUint(b);
            }
        }
    }
}
