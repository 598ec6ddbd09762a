#version 450
// Prefill attention on cooperative matrices (tensor cores / WMMA): attention_flash.comp's
// tiling (a workgroup takes 64 query rows of one KV head, row = (token t, query head g of the
// GQA group), and reads each tile of BC cached positions once for all of them) with both
// products, S = Q K^T and O += P V, on 16 x 16 x 16 f16 fragments. Each of the 4 subgroups owns
// 16 rows: its q as 8 (head_dim 128) A fragments in registers, its output as head_dim / 16
// accumulators. Per tile the subgroup stores S to shared memory, where lanes (two a row) take the
// online softmax: the causal / window mask, softcap, the row's max, P as f16 and the factor its
// accumulators are rescaled by. The accumulators' elements are scaled in registers: which row
// an element belongs to is the same for every accumulator (one type), so it is read once, off
// a fragment loaded from a matrix of row numbers.
// f16 K/V cache only (the tiles are copied as they are); q and P are rounded to f16, the sums
// stay f32. Written against GL_NV_cooperative_matrix and rewritten to the KHR form at build
// time, as matmul_coopmat.comp. Needs subgroups of 32 and head_dim % 16 == 0, <= 128.
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint HD16 = 8u;  // head_dim / 16
// A's rows and B's columns (always 16) as their own constants, as in matmul_coopmat.comp: the
// rewrite tells the A, B and accumulator types apart by their operands.
layout(constant_id = 1) const int A_ROWS = 16;
layout(constant_id = 2) const int B_COLS = 16;
layout(push_constant) uniform P {
    Floats q; Uints k; Uints v; Floats y; Uints step;  // step.v[0] = n_past
    uint n_tok; uint n_head; uint n_kv_head; uint head_dim; uint window;
    float scale; float softcap;
} p;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Quads { uvec4 v[]; };

const uint BC = 32u, SG = 4u, ROWS = 16u * SG;
const uint PK = HD16 * 2u + 1u;  // a K / V / q row: head_dim halves + 8 of padding, in uvec4s
const uint PS = BC + 4u;         // an S row in floats
const uint PP = BC / 8u + 1u;    // a P row in uvec4s
shared uvec4 kv[2u * BC * PK];   // K tile then V tile ([position][dims]); q first (64 rows)
shared float ss[SG * 16u * PS];  // each subgroup's S, then its output fragments on the way out
shared uvec4 sp[SG * 16u * PP];  // each subgroup's P (f16)
shared float sf[SG * 16u];       // each subgroup's per-row factors

#define MAT_A fcoopmatNV<16, 3, A_ROWS, 16>
#define MAT_B fcoopmatNV<16, 3, 16, B_COLS>
#define MAT_C fcoopmatNV<32, 3, 16, 16>

void main() {
    const uint tid = gl_LocalInvocationID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint hd = p.head_dim, group = p.n_head / p.n_kv_head, kvh = gl_WorkGroupID.y;
    const uint r0 = gl_WorkGroupID.x * ROWS;  // the workgroup's first row (t * group + g)
    const uint n_past = p.step.v[0];
    const uint t_first = r0 / group, t_last = min((r0 + ROWS - 1u) / group, p.n_tok - 1u);
    const uint hi = n_past + t_last;
    const uint lo = p.window > 0u && n_past + t_first + 1u > p.window
                        ? n_past + t_first + 1u - p.window : 0u;
    const uint kv_width = p.n_kv_head * hd;
    // This subgroup's rows; softmax lanes: row sr = lane / 2, positions 16 * (lane % 2) + 0..15.
    const uint s0 = r0 + 16u * sg, sr = lane / 2u, half_ = lane % 2u;
    const uint my_t = (s0 + sr) / group;
    const bool my_live = my_t < p.n_tok;
    const uint my_pos = n_past + my_t;
    const uint my_lo = p.window > 0u && my_pos + 1u > p.window ? my_pos + 1u - p.window : 0u;
    const uint sub_t_last = min((s0 + 15u) / group, p.n_tok - 1u);
    const bool sub_live = s0 / group < p.n_tok;
    const uint sub_hi = n_past + sub_t_last;  // the last position this subgroup's rows see

    // q (scaled) as f16 into the tile space: 64 rows of PK, one row per 2 invocations.
    for (uint e = tid; e < ROWS * HD16 * 2u; e += 128u) {
        const uint rr = e / (HD16 * 2u), c = e % (HD16 * 2u), t = (r0 + rr) / group;
        const uint h = kvh * group + (r0 + rr) % group;
        uvec4 w = uvec4(0u);
        if (t < p.n_tok) {
            const uint at = (t * p.n_head + h) * hd + 8u * c;
            const float sc = p.scale;
            w = uvec4(packHalf2x16(vec2(p.q.v[at], p.q.v[at + 1u]) * sc),
                      packHalf2x16(vec2(p.q.v[at + 2u], p.q.v[at + 3u]) * sc),
                      packHalf2x16(vec2(p.q.v[at + 4u], p.q.v[at + 5u]) * sc),
                      packHalf2x16(vec2(p.q.v[at + 6u], p.q.v[at + 7u]) * sc));
        }
        kv[rr * PK + c] = w;
    }
    // The row of each accumulator element: a fragment of M(r, c) = r.
    for (uint e = lane; e < 256u; e += 32u)
        ss[sg * 16u * PS + (e / 16u) * PS + e % 16u] = float(e / 16u);
    barrier();
    MAT_A qa[HD16];
    [[unroll]] for (uint i = 0u; i < HD16; ++i)
        coopMatLoadNV(qa[i], kv, (16u * sg) * PK + 2u * i, PK, false);
    MAT_C rowm;
    coopMatLoadNV(rowm, ss, sg * 16u * PS, PS, false);
    uint row_of[8];  // 16 x 16 over 32 lanes: 8 each (more would fail the first-use check)
    [[unroll]] for (uint i = 0u; i < 8u; ++i)
        row_of[i] = i < uint(rowm.length()) ? uint(rowm[i]) : 0u;
    MAT_C o[HD16];
    [[unroll]] for (uint i = 0u; i < HD16; ++i) o[i] = MAT_C(0.0);
    float m = -1e30, l = 0.0;
    barrier();  // q and the row numbers read before the tiles overwrite them

    for (uint base = lo; base <= hi; base += BC) {
        // K and V rows of the tile as they are in the cache (f16); past hi: zeros.
        for (uint e = tid; e < BC * HD16 * 2u; e += 128u) {
            const uint j = e / (HD16 * 2u), c = e % (HD16 * 2u);
            uvec4 kw = uvec4(0u), vw = uvec4(0u);
            if (base + j <= hi) {
                const uint at = ((base + j) * kv_width + kvh * hd) / 8u + c;
                kw = Quads(p.k).v[at];
                vw = Quads(p.v).v[at];
            }
            kv[j * PK + c] = kw;
            kv[(BC + j) * PK + c] = vw;
        }
        barrier();
        // Subgroup-uniform: skip tiles none of this subgroup's rows sees.
        if (sub_live && base <= sub_hi) {
            MAT_C s[2];
            s[0] = MAT_C(0.0);
            s[1] = MAT_C(0.0);
            [[unroll]] for (uint i = 0u; i < HD16; ++i) {
                [[unroll]] for (uint n = 0u; n < 2u; ++n) {
                    MAT_B kb;  // B(d, j) = K[16n + j][16i + d]: column-major over the K rows
                    coopMatLoadNV(kb, kv, (16u * n) * PK + 2u * i, PK, true);
                    s[n] = coopMatMulAddNV(qa[i], kb, s[n]);
                }
            }
            coopMatStoreNV(s[0], ss, sg * 16u * PS, PS, false);
            coopMatStoreNV(s[1], ss, sg * 16u * PS + 16u, PS, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            // The softmax of row sr over this tile's 16 * half_ .. + 15, two lanes a row.
            float sv[16];
            float mx = -1e30;
            [[unroll]] for (uint j = 0u; j < 16u; ++j) {
                const uint ps = base + 16u * half_ + j;
                float d = ss[sg * 16u * PS + sr * PS + 16u * half_ + j];
                if (p.softcap > 0.0) d = p.softcap * tanh(d / p.softcap);
                sv[j] = my_live && ps >= my_lo && ps <= my_pos ? d : -1e30;
                mx = max(mx, sv[j]);
            }
            mx = max(mx, subgroupShuffleXor(mx, 1u));
            const float m_new = max(m, mx), f = exp(m - m_new);
            float sum = 0.0;
            uint pk[8];
            [[unroll]] for (uint j = 0u; j < 16u; j += 2u) {
                const float e0 = sv[j] > -1e30 ? exp(sv[j] - m_new) : 0.0;
                const float e1 = sv[j + 1u] > -1e30 ? exp(sv[j + 1u] - m_new) : 0.0;
                sum += e0 + e1;
                pk[j / 2u] = packHalf2x16(vec2(e0, e1));
            }
            sum += subgroupShuffleXor(sum, 1u);
            l = l * f + sum;
            m = m_new;
            sp[(sg * 16u + sr) * PP + 2u * half_] = uvec4(pk[0], pk[1], pk[2], pk[3]);
            sp[(sg * 16u + sr) * PP + 2u * half_ + 1u] = uvec4(pk[4], pk[5], pk[6], pk[7]);
            if (half_ == 0u) sf[sg * 16u + sr] = f;
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            [[unroll]] for (uint i = 0u; i < HD16; ++i)
                for (int e = 0; e < min(o[i].length(), 8); ++e)
                    o[i][e] *= sf[sg * 16u + row_of[e]];
            [[unroll]] for (uint n = 0u; n < 2u; ++n) {
                MAT_A pa;
                coopMatLoadNV(pa, sp, (sg * 16u) * PP + 2u * n, PP, false);
                [[unroll]] for (uint i = 0u; i < HD16; ++i) {
                    MAT_B vb;  // B(j, d) = V[16n + j][16i + d]: row-major over the V rows
                    coopMatLoadNV(vb, kv, (BC + 16u * n) * PK + 2u * i, PK, false);
                    o[i] = coopMatMulAddNV(pa, vb, o[i]);
                }
            }
        }
        barrier();  // the tile is rewritten next
    }
    if (!sub_live) return;
    // 1 / l per row into sf, then each output fragment through the subgroup's S space.
    if (half_ == 0u) sf[sg * 16u + sr] = my_live ? 1.0 / l : 0.0;
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint i = 0u; i < HD16; ++i) {
        coopMatStoreNV(o[i], ss, sg * 16u * PS, PS, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        [[unroll]] for (uint e = 0u; e < 8u; ++e) {
            const uint idx = lane + 32u * e, rr = idx / 16u, d = 16u * i + idx % 16u;
            const uint t = (s0 + rr) / group, h = kvh * group + (s0 + rr) % group;
            if (t < p.n_tok)
                p.y.v[(t * p.n_head + h) * hd + d] = ss[sg * 16u * PS + rr * PS + idx % 16u] *
                                                      sf[sg * 16u + rr];
        }
        subgroupBarrier();
    }
}
