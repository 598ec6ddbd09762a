#version 450
// Activations x [n_tok, n_in] (n_in % 32 == 0) to q8 (q8_act.glsl) for the int8-dot matvec:
// one invocation per 4 values, 8 per 32-value block. OP = 4 / 5: x = silu(a) * b or
// gelu_tanh(a) * b first (the FFN's gated activation feeding the down matmul), also written to
// y in f32; OP = 0: x = a.
#extension GL_KHR_shader_subgroup_basic : enable
#include "common.glsl"
#include "q8_act.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 0;
layout(push_constant) uniform P { Vec4s a; Vec4s b; Vec4s y; Uints qs; Vec2s ds; uint n4; } p;
void main() {
    const uint i = gl_GlobalInvocationID.x;
    const bool live = i < p.n4;  // n4 % 8 == 0: a block's 8 invocations are all live or not
    vec4 v = live ? p.a.v[i] : vec4(0.0);
    if (OP != 0u && live) {
        const vec4 u = p.b.v[i];
        [[unroll]] for (uint k = 0u; k < 4u; ++k)
            v[k] = (OP == 4u ? silu(v[k]) : gelu_tanh(v[k])) * u[k];
        p.y.v[i] = v;
    }
    q8_store_vec4(v, i, live, p.qs, p.ds);
}
