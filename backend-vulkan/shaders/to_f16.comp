#version 450
// y = x as f16 bits, saturated at +-65504 (what matmul_coopmat makes of an f32 activation), 8
// values an invocation: a prefill matmul's input made once for the matmuls that share it
// (q/k/v, gate/up), which then read 16 bytes for 8 values and convert nothing.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform P { Vec4s x; Uvec4s y; uint n8; } p;
void main() {
    const uint i = (gl_WorkGroupID.x + gl_WorkGroupID.z * 32768u) * 256u + gl_LocalInvocationID.x;
    if (i >= p.n8) return;
    const vec4 a = clamp(p.x.v[2u * i], -65504.0, 65504.0);
    const vec4 b = clamp(p.x.v[2u * i + 1u], -65504.0, 65504.0);
    p.y.v[i] = uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy),
                     packHalf2x16(b.zw));
}
