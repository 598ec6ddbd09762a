#version 450
// Device copy-bandwidth probe (vk_copy_bandwidth.cpp): dst = src, n 16-byte words, each
// invocation issuing 4 loads before its 4 stores over a grid-stride loop, the way the kernels
// stream weights (vkCmdCopyBuffer may run on a slower copy engine on some drivers).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Vec4s { uvec4 v[]; };
layout(push_constant) uniform P { Vec4s src; Vec4s dst; uint n; } p;
void main() {
    const uint stride = gl_NumWorkGroups.x * 256u;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += 4u * stride) {
        uvec4 a[4];
        [[unroll]] for (uint k = 0u; k < 4u; ++k) {
            const uint j = i + k * stride;
            a[k] = j < p.n ? p.src.v[j] : uvec4(0u);
        }
        [[unroll]] for (uint k = 0u; k < 4u; ++k) {
            const uint j = i + k * stride;
            if (j < p.n) p.dst.v[j] = a[k];
        }
    }
}
