#version 450
// Split-K decode attention (flash-decoding), pass 1: workgroup (split s, kv head block, token t)
// attends HB query heads of one GQA group over its share of the cached positions, so each K/V
// row is read once for those heads and a step has n_split times more workgroups than heads.
// Latency first (a share is often 16-40 positions): a cluster of 8 consecutive lanes takes one
// position at a time (lane i holds head dims DPL*i .. DPL*i + DPL-1 of q, K, V: 16-byte loads),
// the score is summed across the cluster with three subgroup shuffles and every lane of it
// keeps the online softmax (m, l, acc) of its dims in registers, so the position loop has no
// barrier; the 16 clusters' states are merged once at the end through shared memory. Writes per
// head an unnormalised partial (max m, sum l, acc[head_dim]) that attention_combine.comp merges.
// n_past comes from the step parameters, and the share of a split is computed here from it, so
// recorded commands serve every step. Needs head_dim % 16 == 0 and a subgroup size that 8
// divides (the host checks both).
// merge != 0: only the splits with positions run, and the last of a head block's splits to
// finish merges them (no attention_combine dispatch: 5.5 us a layer of an 8B decode on an H200,
// docs/vulkan.md): each writes its partial, then takes a ticket (a counter per token and head
// block, zero, set back to zero by its last taker); the last reads the partials back (coherent)
// and writes y, and its q8 activations when qs is set (head_dim % 32 == 0).
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "common.glsl"
#include "q8_act.glsl"
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint KV_F16 = 1;
layout(constant_id = 1) const uint DPL = 16u;  // head_dim / 8: dims per lane
layout(constant_id = 2) const uint HB = 4u;    // query heads per workgroup
const uint WG = 128u, CL = 8u, NCL = WG / CL, MAX_HD = 256u, MIN_SHARE = 16u;
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer CFloats { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) coherent buffer CVec4s { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer Tickets { uint v[]; };
layout(push_constant) uniform P {
    Floats q; Uints k; Uints v; CFloats part; Uints step;  // step.v[0] = n_past
    uint n_tok; uint n_head; uint n_kv_head; uint head_dim; uint window; uint n_split;
    float scale; float softcap;
    Tickets tickets; Floats y; Uints qs; Vec2s ds;  // merge only; qs / ds: with q8
    uint merge; uint q8;
    uint q_vec4;  // q's rows start on 16 bytes
} p;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Quads { uvec4 v[]; };
shared float cm[NCL * HB], cl_sum[NCL * HB];  // each cluster's m and l per head
shared float cacc[NCL * MAX_HD];              // one head's accumulators, per cluster
const uint MAX_SPLIT = 32u;  // merge: splits per head block at most (kAttnMergeMaxSplits)
shared float sm[HB * MAX_SPLIT], sl[HB * MAX_SPLIT], sw[HB * MAX_SPLIT], sinv[HB];
shared uint last_wg;

// The max / sum of v over the lanes whose index differs from this one's in bits lo..hi-1 only
// (lo, hi powers of two, hi at most the subgroup size): xor shuffles, every lane gets it.
float xor_max(float v, uint lo, uint hi) {
    for (uint o = lo; o < hi; o <<= 1) v = max(v, subgroupShuffleXor(v, o));
    return v;
}
float xor_sum(float v, uint lo, uint hi) {
    for (uint o = lo; o < hi; o <<= 1) v += subgroupShuffleXor(v, o);
    return v;
}

// Elements e0 .. e0 + DPL - 1 of a K/V cache (e0 % 8 == 0: DPL is a multiple of 2 and f16 rows
// start on 16 bytes when DPL % 8 == 0).
void load_dims(Uints c, uint e0, out float r[DPL]) {
    if (KV_F16 != 0u) {
        if (DPL % 8u == 0u) {
            [[unroll]] for (uint i = 0u; i < DPL / 8u; ++i) {
                const uvec4 w = Quads(c).v[(e0 >> 3) + i];
                [[unroll]] for (uint j = 0u; j < 4u; ++j) {
                    const vec2 h = unpackHalf2x16(w[j]);
                    r[8u * i + 2u * j] = h.x;
                    r[8u * i + 2u * j + 1u] = h.y;
                }
            }
        } else {
            [[unroll]] for (uint i = 0u; i < DPL / 2u; ++i) {
                const vec2 h = unpackHalf2x16(c.v[(e0 >> 1) + i]);
                r[2u * i] = h.x;
                r[2u * i + 1u] = h.y;
            }
        }
    } else if (DPL % 4u == 0u) {
        [[unroll]] for (uint i = 0u; i < DPL / 4u; ++i) {
            const uvec4 w = Quads(c).v[(e0 >> 2) + i];
            [[unroll]] for (uint j = 0u; j < 4u; ++j) r[4u * i + j] = uintBitsToFloat(w[j]);
        }
    } else {
        [[unroll]] for (uint i = 0u; i < DPL; ++i) r[i] = uintBitsToFloat(c.v[e0 + i]);
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x, hd = p.head_dim, split = gl_WorkGroupID.x;
    const uint cl = tid / CL, ln = tid % CL, d0 = ln * DPL;
    const uint group = p.n_head / p.n_kv_head, blocks = (group + HB - 1u) / HB;
    const uint kvh = gl_WorkGroupID.y / blocks, h0 = kvh * group + (gl_WorkGroupID.y % blocks) * HB;
    const uint nh = min(HB, kvh * group + group - h0), t = gl_WorkGroupID.z;
    const uint pos = p.step.v[0] + t;
    const uint lo = p.window > 0u && pos + 1u > p.window ? pos + 1u - p.window : 0u;
    const uint len = pos + 1u - lo;
    const uint share = max((len + p.n_split - 1u) / p.n_split, MIN_SHARE);
    const uint n_active = (len + share - 1u) / share;  // splits with positions
    if (p.merge != 0u && split >= n_active) return;    // uniform over the workgroup
    const uint begin = min(lo + split * share, pos + 1u), end = min(begin + share, pos + 1u);
    const uint kv_width = p.n_kv_head * hd;

    float q[HB][DPL], acc[HB][DPL], m[HB], l[HB];
    [[unroll]] for (uint g = 0u; g < HB; ++g) {
        m[g] = -1e30;
        l[g] = 0.0;
        const uint qb = (t * p.n_head + h0 + min(g, nh - 1u)) * hd + d0;
        [[unroll]] for (uint i = 0u; i < DPL; ++i) acc[g][i] = 0.0;
        // A lane's DPL dims of q as 16-byte loads where its rows allow (a quarter of the load
        // instructions: every lane of every split workgroup loads its heads' q).
        if (DPL % 4u == 0u && p.q_vec4 != 0u) {
            [[unroll]] for (uint i = 0u; i < DPL / 4u; ++i) {
                const vec4 x = Vec4s(p.q).v[(qb >> 2) + i] * p.scale;
                [[unroll]] for (uint j = 0u; j < 4u; ++j) q[g][4u * i + j] = x[j];
            }
        } else {
            [[unroll]] for (uint i = 0u; i < DPL; ++i) q[g][i] = p.q.v[qb + i] * p.scale;
        }
    }
    // Clusters take positions begin + cl, begin + cl + NCL, ...: a cluster's 8 lanes are all
    // in the loop or all out of it, so the shuffles see their whole cluster.
    for (uint j = begin + cl; j < end; j += NCL) {
        const uint kb = j * kv_width + kvh * hd + d0;
        float kr[DPL], vr[DPL];
        load_dims(p.k, kb, kr);
        load_dims(p.v, kb, vr);
        [[unroll]] for (uint g = 0u; g < HB; ++g) {
            float s = 0.0;
            [[unroll]] for (uint i = 0u; i < DPL; ++i) s += q[g][i] * kr[i];
            s += subgroupShuffleXor(s, 1u);
            s += subgroupShuffleXor(s, 2u);
            s += subgroupShuffleXor(s, 4u);
            if (p.softcap > 0.0) s = p.softcap * tanh(s / p.softcap);
            const float m_new = max(m[g], s), f = exp(m[g] - m_new), e = exp(s - m_new);
            m[g] = m_new;
            l[g] = l[g] * f + e;
            [[unroll]] for (uint i = 0u; i < DPL; ++i) acc[g][i] = acc[g][i] * f + e * vr[i];
        }
    }
    // Merge the clusters: M = max m, L = sum l e^(m - M), acc = sum acc e^(m - M).
    if (gl_SubgroupSize >= 32u && gl_SubgroupSize <= WG) {
        // A subgroup's clusters by shuffles (lane i of every cluster holds the same dims), all
        // heads at once; then the gl_NumSubgroups (<= 4) subgroups' states through shared
        // memory behind one barrier, where the loop below takes two barriers a head.
        const uint sg = gl_SubgroupID;
        [[unroll]] for (uint g = 0u; g < HB; ++g) {
            const float Ms = xor_max(m[g], CL, gl_SubgroupSize), f = exp(m[g] - Ms);
            const float ls = xor_sum(l[g] * f, CL, gl_SubgroupSize);
            [[unroll]] for (uint i = 0u; i < DPL; ++i)
                acc[g][i] = xor_sum(acc[g][i] * f, CL, gl_SubgroupSize);
            if (gl_SubgroupInvocationID < CL) {  // the subgroup's first cluster writes its state
                [[unroll]] for (uint i = 0u; i < DPL; ++i)
                    cacc[(sg * HB + g) * hd + d0 + i] = acc[g][i];
                if (ln == 0u) {
                    cm[sg * HB + g] = Ms;
                    cl_sum[sg * HB + g] = ls;
                }
            }
        }
        barrier();
        const uint nsg = gl_NumSubgroups;
        for (uint e = tid; e < nh * hd; e += WG) {  // (head g, dim d)
            const uint g = e / hd, d = e % hd;
            float M = -1e30;
            for (uint j = 0u; j < nsg; ++j) M = max(M, cm[j * HB + g]);
            float a = 0.0, L = 0.0;
            for (uint j = 0u; j < nsg; ++j) {
                const float w = exp(cm[j * HB + g] - M);
                a += cacc[(j * HB + g) * hd + d] * w;
                L += cl_sum[j * HB + g] * w;
            }
            const uint row = (t * p.n_head + h0 + g) * p.n_split + split;
            p.part.v[row * hd + d] = a;
            if (d == 0u) {
                const uint ml = p.n_tok * p.n_head * p.n_split * hd + 2u * row;
                p.part.v[ml] = M;
                p.part.v[ml + 1u] = L;
            }
        }
    } else {
        if (ln == 0u)
            [[unroll]] for (uint g = 0u; g < HB; ++g) {
                cm[cl * HB + g] = m[g];
                cl_sum[cl * HB + g] = l[g];
            }
        barrier();
        [[unroll]] for (uint g = 0u; g < HB; ++g) {
            if (g >= nh) break;  // uniform over the workgroup
            float M = -1e30;
            for (uint c = 0u; c < NCL; ++c) M = max(M, cm[c * HB + g]);
            const float f = exp(m[g] - M);
            [[unroll]] for (uint i = 0u; i < DPL; ++i)
                cacc[cl * MAX_HD + d0 + i] = acc[g][i] * f;
            barrier();
            const uint row = (t * p.n_head + h0 + g) * p.n_split + split;
            for (uint d = tid; d < hd; d += WG) {
                float a = 0.0;
                for (uint c = 0u; c < NCL; ++c) a += cacc[c * MAX_HD + d];
                p.part.v[row * hd + d] = a;
            }
            if (tid == 0u) {
                float L = 0.0;
                for (uint c = 0u; c < NCL; ++c)
                    L += cl_sum[c * HB + g] * exp(cm[c * HB + g] - M);
                const uint ml = p.n_tok * p.n_head * p.n_split * hd + 2u * row;
                p.part.v[ml] = M;
                p.part.v[ml + 1u] = L;
            }
            barrier();  // cacc is rewritten for the next head
        }
    }

    if (p.merge == 0u) return;
    // The last split of the head block to finish merges its heads' partials: every invocation's
    // writes made visible, one ticket per workgroup, the last reads them back coherently.
    memoryBarrierBuffer();
    barrier();
    const uint ticket = t * gl_NumWorkGroups.y + gl_WorkGroupID.y;
    if (tid == 0u) {
        last_wg = atomicAdd(p.tickets.v[ticket], 1u) == n_active - 1u ? 1u : 0u;
        if (last_wg != 0u) atomicExchange(p.tickets.v[ticket], 0u);  // ready for the next step
    }
    barrier();
    if (last_wg == 0u) return;
    memoryBarrierBuffer();
    // Invocation (head g, 4 dims c) sums the splits' partials (whole 8-lane clusters per 32
    // dims for the q8 store). 8 splits' loads in flight before any is added (one after the
    // other, each waited a trip to L2: docs/hip.md); past the last split with positions the
    // last one again, weight 0, so no branch between them. The first 8 are asked for before
    // the weights are worked out, so that trip overlaps it.
    const uint h4 = hd / 4u, g = tid / h4, c = tid % h4;
    const bool sums = tid < HB * h4;
    const uint row0 = (t * p.n_head + h0 + min(g, nh - 1u)) * p.n_split;
    vec4 x[8];
    if (sums)
        [[unroll]] for (uint j = 0u; j < 8u; ++j)
            x[j] = CVec4s(p.part).v[(row0 + min(j, n_active - 1u)) * h4 + c];
    const uint mlb = p.n_tok * p.n_head * p.n_split * hd;  // the (m, l) pairs after the partials
    if (gl_SubgroupSize >= MAX_SPLIT) {
        // A group of MAX_SPLIT lanes per head (HB * MAX_SPLIT <= WG), lane s holding split s:
        // the max and the weighted sum by shuffles within the group, no shared-memory passes.
        const uint hg = tid / MAX_SPLIT, s = tid % MAX_SPLIT;
        const bool live = hg < HB && s < n_active;
        const uint row = (t * p.n_head + h0 + min(hg, nh - 1u)) * p.n_split + s;
        const float ms = live ? p.part.v[mlb + 2u * row] : -1e30;
        const float ls = live ? p.part.v[mlb + 2u * row + 1u] : 0.0;
        const float M = xor_max(ms, 1u, MAX_SPLIT), w = ls > 0.0 ? exp(ms - M) : 0.0;
        const float L = xor_sum(ls * w, 1u, MAX_SPLIT);
        if (hg < HB) {
            sw[tid] = w;
            if (s == 0u) sinv[hg] = 1.0 / L;
        }
    } else {
        for (uint i = tid; i < HB * MAX_SPLIT; i += WG) {  // (head g, split s): its m and l
            const uint hg = i / MAX_SPLIT, s = i % MAX_SPLIT;
            const uint row = (t * p.n_head + h0 + min(hg, nh - 1u)) * p.n_split + s;
            const bool live = s < n_active;
            sm[i] = live ? p.part.v[mlb + 2u * row] : -1e30;
            sl[i] = live ? p.part.v[mlb + 2u * row + 1u] : 0.0;
        }
        barrier();
        for (uint i = tid; i < HB * MAX_SPLIT; i += WG) {  // weights e^(m_s - M), 0 for the empty
            const uint hg = i / MAX_SPLIT;
            float M = -1e30;
            for (uint s = 0u; s < n_active; ++s) M = max(M, sm[hg * MAX_SPLIT + s]);
            sw[i] = sl[i] > 0.0 ? exp(sm[i] - M) : 0.0;
        }
        barrier();
        if (tid < HB) {
            float L = 0.0;
            for (uint s = 0u; s < n_active; ++s)
                L += sl[tid * MAX_SPLIT + s] * sw[tid * MAX_SPLIT + s];
            sinv[tid] = 1.0 / L;
        }
    }
    barrier();
    if (sums) {
        vec4 a = vec4(0.0);
        for (uint s0 = 0u;;) {
            [[unroll]] for (uint j = 0u; j < 8u; ++j) a += x[j] * sw[g * MAX_SPLIT + s0 + j];
            s0 += 8u;
            if (s0 >= n_active) break;
            [[unroll]] for (uint j = 0u; j < 8u; ++j)
                x[j] = CVec4s(p.part).v[(row0 + min(s0 + j, n_active - 1u)) * h4 + c];
        }
        const vec4 o = a * sinv[g];
        const uint r = t * p.n_head + h0 + g;  // output row
        if (g < nh)
            [[unroll]] for (uint k = 0u; k < 4u; ++k) p.y.v[r * hd + 4u * c + k] = o[k];
        if (p.q8 != 0u) q8_store_vec4(o, r * h4 + c, g < nh, p.qs, p.ds);
    }
}
