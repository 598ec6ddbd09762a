#version 450
// Writes value into every element of a buffer; the smallest kernel, used by the sanity test to
// prove the SPIR-V embedding and a dispatch work end to end.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Out { float data[]; };
layout(push_constant) uniform Params { uint n; float value; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) data[i] = p.value;
}
