#version 450
// One workgroup: the route's slots held here grouped by expert, for moe_q8.comp's prefill:
// lists = offsets [n_local + 1], then the slots. The order inside an expert's run follows the
// atomics; each slot's sums are made alone, so it does not change any output.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform P { Floats route; Uints lists; uint n_slots; uint first; uint n_local; } p;
shared uint cursor[1024];
#include "moe_slots.glsl"
void main() {
    const uint tid = gl_LocalInvocationID.x;
    for (uint e = tid; e < p.n_local; e += 256u) cursor[e] = 0u;
    barrier();
    for (uint s = tid; s < p.n_slots; s += 256u) {
        const int le = slot_expert(s);
        if (le >= 0) atomicAdd(cursor[le], 1u);
    }
    barrier();
    if (tid == 0u) {
        uint at = 0u;
        for (uint e = 0u; e < p.n_local; ++e) {
            const uint n = cursor[e];
            p.lists.v[e] = at;
            cursor[e] = at;
            at += n;
        }
        p.lists.v[p.n_local] = at;
    }
    barrier();
    for (uint s = tid; s < p.n_slots; s += 256u) {
        const int le = slot_expert(s);
        if (le >= 0) p.lists.v[p.n_local + 1u + atomicAdd(cursor[le], 1u)] = s;
    }
}
