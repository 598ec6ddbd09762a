#version 450
// Rotary embedding: one invocation per (token, head, rotated pair); the dimensions past n_rot
// are copied. cos/sin come from a table the host computed in double precision from the step's
// positions (has_table), else from float angles here.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform P {
    Floats x; Ints pos; Floats ff; Floats y; Floats table;
    uint n_tok; uint n_head; uint head_dim; uint n_rot; uint neox; uint has_ff; uint has_table;
    float freq_base; float freq_scale;
} p;
void main() {
    const uint r = gl_WorkGroupID.y + gl_WorkGroupID.z * 32768u;  // token * n_head + head
    if (r >= p.n_tok * p.n_head) return;
    const uint t = r / p.n_head, base = r * p.head_dim, half_rot = p.n_rot / 2u;
    for (uint i = gl_LocalInvocationID.x; i < p.head_dim / 2u; i += 64u) {
        if (i < half_rot) {
            float c, s;
            if (p.has_table != 0u) {
                c = p.table.v[(t * half_rot + i) * 2u];
                s = p.table.v[(t * half_rot + i) * 2u + 1u];
            } else {
                float inv = pow(p.freq_base, -2.0 * float(i) / float(p.n_rot));
                if (p.has_ff != 0u) inv /= p.ff.v[i];
                float a = float(p.pos.v[t]) * p.freq_scale * inv;
                // GPU sin/cos are only accurate near [-pi, pi]; positions reach thousands of radians.
                a -= 6.2831853071795865 * floor(a / 6.2831853071795865 + 0.5);
                c = cos(a);
                s = sin(a);
            }
            const uint i0 = p.neox != 0u ? i : 2u * i, i1 = p.neox != 0u ? i + half_rot : 2u * i + 1u;
            const float x0 = p.x.v[base + i0], x1 = p.x.v[base + i1];
            p.y.v[base + i0] = x0 * c - x1 * s;
            p.y.v[base + i1] = x0 * s + x1 * c;
        } else {
            // pass-through pairs past n_rot
            const uint j = p.n_rot + 2u * (i - half_rot);
            p.y.v[base + j] = p.x.v[base + j];
            p.y.v[base + j + 1u] = p.x.v[base + j + 1u];
        }
    }
}
