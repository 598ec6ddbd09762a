#version 450
// Read-bandwidth probe (vk_placement_probe.cpp): reads n 16-byte words at src, each invocation
// issuing 4 loads per trip of a grid-stride loop, and keeps them live with a store that the data
// decides (practically never taken), so only reads reach memory. Timed over imported weight pages
// against a device buffer to choose where the weights live.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Vec4s { uvec4 v[]; };
layout(push_constant) uniform P { Vec4s src; Vec4s sink; uint n; } p;
void main() {
    const uint stride = gl_NumWorkGroups.x * 256u;
    uvec4 acc = uvec4(0u);
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += 4u * stride) {
        uvec4 a[4];
        [[unroll]] for (uint k = 0u; k < 4u; ++k) {
            const uint j = i + k * stride;
            a[k] = j < p.n ? p.src.v[j] : uvec4(0u);
        }
        [[unroll]] for (uint k = 0u; k < 4u; ++k) acc ^= a[k];
    }
    if (acc == uvec4(0x7fc00001u, p.n, 0x9e3779b9u, gl_GlobalInvocationID.x)) p.sink.v[0] = acc;
}
