#version 450
// Element-wise ops over n floats; the op is a specialisation constant:
// 0 add, 1 mul, 2 scale (f), 3 softcap (f), 4 silu(a)*b, 5 gelu_tanh(a)*b, 6 copy.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 0;
layout(push_constant) uniform P { Floats a; Floats b; Floats y; uint n; float f; } p;
void main() {
    const uint stride = gl_NumWorkGroups.x * 256u;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        float x = p.a.v[i], r;
        if (OP == 0u) r = x + p.b.v[i];
        else if (OP == 1u) r = x * p.b.v[i];
        else if (OP == 2u) r = x * p.f;
        else if (OP == 3u) r = p.f * tanh(x / p.f);
        else if (OP == 4u) r = silu(x) * p.b.v[i];
        else if (OP == 5u) r = gelu_tanh(x) * p.b.v[i];
        else r = x;
        p.y.v[i] = r;
    }
}
