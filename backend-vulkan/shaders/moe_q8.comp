#version 450
// The expert FFN's matvecs over q8 activations (q8_items.glsl), the HIP backend's design
// (hip_moe_q8.hip). MODE 0: R rows of gate and up (two parts: w / y and w1 / y1) or of the
// down projection (one part; each slot's rows times its route weight, F_WEIGHTED) for the
// slots of one expert: decode, workgroup (row block, slot), the slot's expert from the route;
// prefill (F_LISTS), workgroup (row block, expert), the expert's slots from moe_lists.comp, TOK
// at a time, so its weights are read once per TOK slots. MODE 1: the decode down projection,
// workgroup (row block, token), invocation group g (32 invocations) on the token's slots g,
// g + WG / 32, ..., the slots summed inside the workgroup (no atomics).
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
#include "dq_group.glsl"
#include "q8_act.glsl"
layout(local_size_x_id = 1) in;
layout(constant_id = 0) const uint TYPE = 0;
layout(constant_id = 1) const uint WG = 64;
layout(constant_id = 2) const uint TOK = 1;
layout(constant_id = 3) const uint MODE = 0;
const uint K64 = 0;  // the experts keep 32-weight K-quant items (q8_items.glsl)
layout(push_constant) uniform P {
    Uints w; Uints xq; Vec2s xd; Floats y; Floats route;
    Uints w1; Floats y1;
    Uints lists;  // F_LISTS: offsets [n_local + 1], then the slots grouped by expert
    uint n_in; uint rows; uint row_bytes; uint k; uint first; uint n_local; uint flags;
} p;
#include "q8_items.glsl"

const uint R = 4u;  // rows a workgroup
const uint F_PER_TOKEN = 1u, F_WEIGHTED = 2u, F_LISTS = 4u;
shared float red[R * TOK * WG];

#include "moe_slots.glsl"

// red[v * WG + i] summed over i into red[v * WG], for v < n; every invocation calls it.
void reduce(uint tid, uint n) {
    barrier();
    for (uint st = WG / 2u; st > 0u; st >>= 1) {
        if (tid < st)
            for (uint v = 0u; v < n; ++v) red[v * WG + tid] += red[v * WG + tid + st];
        barrier();
    }
}

void main_rows() {
    const uint tid = gl_LocalInvocationID.x;
    const uint first_row = gl_WorkGroupID.x * R;
    const uint part = first_row >= p.rows ? 1u : 0u;
    const uint r0 = first_row - part * p.rows;
    Uints w = part == 0u ? p.w : p.w1;
    Floats y = part == 0u ? p.y : p.y1;
    const bool lists = (p.flags & F_LISTS) != 0u;
    const uint slot0 = gl_WorkGroupID.y;
    int le;
    uint count = 1u, base = 0u;
    if (lists) {
        le = int(gl_WorkGroupID.y);
        base = p.lists.v[le];
        count = p.lists.v[le + 1] - base;
    } else {
        le = slot_expert(slot0);
        if (le < 0) {  // another rank's expert: zeros, so h stays finite
            if (tid < R) y.v[slot0 * p.rows + r0 + tid] = 0.0;
            return;
        }
    }
    const uint n_items = items_per_row();
    uint ro[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) ro[r] = (uint(le) * p.rows + r0 + r) * p.row_bytes;
    for (uint c = 0u; c < count; c += TOK) {
        uint sl[TOK], ar[TOK];
        [[unroll]] for (uint t = 0u; t < TOK; ++t) {
            const uint i = c + t < count ? c + t : c;  // past the end: slot c again
            sl[t] = lists ? p.lists.v[p.n_local + 1u + base + i] : slot0;
            ar[t] = (p.flags & F_PER_TOKEN) != 0u ? sl[t] / p.k : sl[t];
        }
        float acc[R * TOK];
        [[unroll]] for (uint v = 0u; v < R * TOK; ++v) acc[v] = 0.0;
        for (uint it = tid; it < n_items; it += WG) {
            AQ a[TOK];
            [[unroll]] for (uint t = 0u; t < TOK; ++t) a[t] = acts(ar[t], it);
            [[unroll]] for (uint r = 0u; r < R; ++r) {
                const WQ q = weights(w, ro[r], it);
                [[unroll]] for (uint t = 0u; t < TOK; ++t) acc[r * TOK + t] += dotq(q, a[t]);
            }
        }
        [[unroll]] for (uint v = 0u; v < R * TOK; ++v) red[v * WG + tid] = acc[v];
        reduce(tid, R * TOK);
        if (tid < R * TOK) {
            const uint r = tid / TOK, t = tid % TOK;
            if (c + t < count) {
                float s = red[tid * WG];
                if ((p.flags & F_WEIGHTED) != 0u) s *= p.route.v[2u * sl[t] + 1u];
                y.v[sl[t] * p.rows + r0 + r] = s;
            }
        }
        barrier();  // red is written again by the next trip
    }
}

void main_down() {
    const uint tid = gl_LocalInvocationID.x, g = tid / 32u, lane = tid % 32u;
    const uint o0 = gl_WorkGroupID.x * R, t = gl_WorkGroupID.y;
    const uint n_items = items_per_row();
    float tot[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) tot[r] = 0.0;
    for (uint j = g; j < p.k; j += WG / 32u) {
        const uint slot = t * p.k + j;
        const int le = slot_expert(slot);
        if (le < 0) continue;
        const float wgt = p.route.v[2u * slot + 1u];
        float acc[R];
        [[unroll]] for (uint r = 0u; r < R; ++r) acc[r] = 0.0;
        for (uint it = lane; it < n_items; it += 32u) {
            const AQ a = acts(slot, it);
            [[unroll]] for (uint r = 0u; r < R; ++r)
                acc[r] += dotq(weights(p.w, (uint(le) * p.rows + o0 + r) * p.row_bytes, it), a);
        }
        [[unroll]] for (uint r = 0u; r < R; ++r) tot[r] += wgt * acc[r];
    }
    [[unroll]] for (uint r = 0u; r < R; ++r) red[r * WG + tid] = tot[r];
    reduce(tid, R);
    if (tid < R) p.y.v[t * p.rows + o0 + tid] = red[tid * WG];
}

void main() {
    if (MODE == 0u)
        main_rows();
    else
        main_down();
}
