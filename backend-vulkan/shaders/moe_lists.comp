#version 450
// One workgroup: the route's slots held here grouped by expert, for moe_q8.comp's prefill:
// lists = offsets [n_local + 1], then the slots. The order inside an expert's run follows the
// atomics; each slot's sums are made alone, so it does not change any output. tiles != 0 (the
// experts on cooperative matrices, matmul_coopmat.comp MOE): then after the slots the tiles of
// 64 of an expert's slots, a count and (expert, first slot of the run) pairs.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform P { Floats route; Uints lists; uint n_slots; uint first; uint n_local; uint tiles; } p;
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
        uint at = 0u, n_tiles = 0u;
        const uint tiles = p.n_local + 1u + p.n_slots;
        for (uint e = 0u; e < p.n_local; ++e) {
            const uint n = cursor[e];
            p.lists.v[e] = at;
            cursor[e] = at;
            at += n;
            if (p.tiles != 0u)
                for (uint s0 = 0u; s0 < n; s0 += 64u) {
                    p.lists.v[tiles + 1u + 2u * n_tiles] = e;
                    p.lists.v[tiles + 2u + 2u * n_tiles] = s0;
                    ++n_tiles;
                }
        }
        p.lists.v[p.n_local] = at;
        if (p.tiles != 0u) p.lists.v[tiles] = n_tiles;
    }
    barrier();
    for (uint s = tid; s < p.n_slots; s += 256u) {
        const int le = slot_expert(s);
        if (le >= 0) p.lists.v[p.n_local + 1u + atomicAdd(cursor[le], 1u)] = s;
    }
}
