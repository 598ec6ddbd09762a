#version 450
// Prefill attention in tiles (flash attention without matrix units): a workgroup takes 32 x R
// query rows of one KV head, a row being (token t, query head g of the GQA group), and walks the
// cached positions those rows see in tiles of BC, each tile of K and V read into shared memory
// once for all its rows (the one-row-per-workgroup attention.comp reads them once per row: at
// 4096 tokens of an 8B model that kernel, not the matmuls, held prefill).
// A cluster of 8 consecutive lanes owns R rows: lane i holds dims 32k + 4i .. 32k + 4i + 3 of
// q and of the output (so the 8 lanes' 16-byte shared loads of one K/V row are 128 adjacent
// bytes and the clusters of a subgroup read the same row: a broadcast), and each K / V load
// serves the R rows. A score is summed over its cluster with three shuffles. Scores go 16
// positions at a time into registers, then one max, one rescale of the accumulators and 16
// exps: the online softmax per block of 16, not per position.
// Causal per row (position <= n_past + t), sliding window and softcap as attention.comp.
// Needs head_dim % 32 == 0 and a subgroup size that 8 divides (the host checks both).
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint KV_F16 = 1;
layout(constant_id = 1) const uint DPL = 16u;  // head_dim / 8: dims per lane
layout(constant_id = 2) const uint BC = 32u;   // positions per shared tile, a multiple of 16
layout(constant_id = 3) const uint R = 2u;     // rows per cluster (each K / V load serves R)
const uint WG = 256u, CL = 8u, SUB = 16u, NQ = DPL / 4u;
layout(push_constant) uniform P {
    Floats q; Uints k; Uints v; Floats y; Uints step;  // step.v[0] = n_past
    uint n_tok; uint n_head; uint n_kv_head; uint head_dim; uint window;
    float scale; float softcap;
} p;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Quads { uvec4 v[]; };
shared vec4 ks[BC * 2u * DPL];  // [position][head_dim / 4] of the current tile
shared vec4 vs[BC * 2u * DPL];

// The 8 halves of f16 cache word w (16 bytes) as two vec4s, or 2 x 4 floats of an f32 cache.
void load_quad(Uints c, uint elem, out vec4 a, out vec4 b) {
    if (KV_F16 != 0u) {
        const uvec4 w = Quads(c).v[elem >> 3];
        a = vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
        b = vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));
    } else {
        const uvec4 w0 = Quads(c).v[elem >> 2], w1 = Quads(c).v[(elem >> 2) + 1u];
        a = uintBitsToFloat(w0);
        b = uintBitsToFloat(w1);
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x, hd = p.head_dim, cl = tid / CL, ln = tid % CL;
    const uint group = p.n_head / p.n_kv_head, kvh = gl_WorkGroupID.y, nr = (WG / CL) * R;
    const uint r0 = gl_WorkGroupID.x * nr;  // first row of the tile: row = t * group + g
    const uint n_past = p.step.v[0];
    const uint t_first = r0 / group, t_last = min((r0 + nr - 1u) / group, p.n_tok - 1u);
    const uint hi = n_past + t_last;  // the last position any row of the tile sees
    const uint lo = p.window > 0u && n_past + t_first + 1u > p.window
                        ? n_past + t_first + 1u - p.window : 0u;
    const uint kv_width = p.n_kv_head * hd, hd4 = hd / 4u;

    // The cluster's rows cl * R .. cl * R + R - 1: their positions [row_lo, pos]; the cluster
    // walks the union (a row of a later token sees more), each row masks its own.
    vec4 q[R][NQ], acc[R][NQ];
    float m[R], l[R];
    uint t[R], h[R], pos[R], row_lo[R];
    uint c_lo = 0xffffffffu, c_hi = 0u;
    bool any_live = false;
    [[unroll]] for (uint r = 0u; r < R; ++r) {
        const uint row = r0 + cl * R + r;
        t[r] = row / group;
        h[r] = kvh * group + row % group;
        pos[r] = n_past + t[r];
        row_lo[r] = p.window > 0u && pos[r] + 1u > p.window ? pos[r] + 1u - p.window : 0u;
        const bool live = t[r] < p.n_tok;
        if (live) {
            any_live = true;
            c_lo = min(c_lo, row_lo[r]);
            c_hi = max(c_hi, pos[r]);
        }
        m[r] = -1e30;
        l[r] = 0.0;
        [[unroll]] for (uint i = 0u; i < NQ; ++i) {
            const uint at = (t[r] * p.n_head + h[r]) * hd + 32u * i + 4u * ln;
            q[r][i] = live ? vec4(p.q.v[at], p.q.v[at + 1u], p.q.v[at + 2u], p.q.v[at + 3u]) *
                                 p.scale
                           : vec4(0.0);
            acc[r][i] = vec4(0.0);
        }
    }

    for (uint base = lo; base <= hi; base += BC) {
        // The tile's K and V rows as f32; positions past hi read as zeros (never used).
        for (uint e = tid; e < BC * hd / 8u; e += WG) {
            const uint j = e / (hd / 8u), c = e % (hd / 8u), at = (base + j) * kv_width + kvh * hd;
            vec4 ka = vec4(0.0), kb = vec4(0.0), va = vec4(0.0), vb = vec4(0.0);
            if (base + j <= hi) {
                load_quad(p.k, at + 8u * c, ka, kb);
                load_quad(p.v, at + 8u * c, va, vb);
            }
            ks[j * hd4 + 2u * c] = ka;
            ks[j * hd4 + 2u * c + 1u] = kb;
            vs[j * hd4 + 2u * c] = va;
            vs[j * hd4 + 2u * c + 1u] = vb;
        }
        barrier();
        // Whole clusters skip together (their shuffles never see a lane outside the loop).
        const uint first = max(base, c_lo), last = min(base + BC - 1u, c_hi);
        if (any_live && first <= last) {
            for (uint sb = (first - base) & ~(SUB - 1u); sb + base <= last; sb += SUB) {
                float s[R][SUB];
                float mx[R];
                [[unroll]] for (uint r = 0u; r < R; ++r) mx[r] = -1e30;
                [[unroll]] for (uint j = 0u; j < SUB; ++j) {
                    const uint at = (sb + j) * hd4 + ln, ps = base + sb + j;
                    float d[R];
                    [[unroll]] for (uint r = 0u; r < R; ++r) d[r] = 0.0;
                    [[unroll]] for (uint i = 0u; i < NQ; ++i) {
                        const vec4 kq = ks[at + 8u * i];
                        [[unroll]] for (uint r = 0u; r < R; ++r) d[r] += dot(q[r][i], kq);
                    }
                    [[unroll]] for (uint r = 0u; r < R; ++r) {
                        float x = d[r];
                        x += subgroupShuffleXor(x, 1u);
                        x += subgroupShuffleXor(x, 2u);
                        x += subgroupShuffleXor(x, 4u);
                        if (p.softcap > 0.0) x = p.softcap * tanh(x / p.softcap);
                        s[r][j] = t[r] < p.n_tok && ps >= row_lo[r] && ps <= pos[r] ? x : -1e30;
                        mx[r] = max(mx[r], s[r][j]);
                    }
                }
                [[unroll]] for (uint r = 0u; r < R; ++r) {
                    const float m_new = max(m[r], mx[r]), f = exp(m[r] - m_new);
                    l[r] *= f;
                    [[unroll]] for (uint i = 0u; i < NQ; ++i) acc[r][i] *= f;
                    m[r] = m_new;
                    [[unroll]] for (uint j = 0u; j < SUB; ++j) {
                        s[r][j] = s[r][j] > -1e30 ? exp(s[r][j] - m_new) : 0.0;
                        l[r] += s[r][j];
                    }
                }
                [[unroll]] for (uint j = 0u; j < SUB; ++j) {
                    const uint at = (sb + j) * hd4 + ln;
                    [[unroll]] for (uint i = 0u; i < NQ; ++i) {
                        const vec4 vv = vs[at + 8u * i];
                        [[unroll]] for (uint r = 0u; r < R; ++r) acc[r][i] += s[r][j] * vv;
                    }
                }
            }
        }
        barrier();  // the tile is rewritten next
    }
    [[unroll]] for (uint r = 0u; r < R; ++r) {
        if (t[r] >= p.n_tok) continue;
        const float inv = 1.0 / l[r];  // the row's own position is always seen: l > 0
        [[unroll]] for (uint i = 0u; i < NQ; ++i) {
            const uint at = (t[r] * p.n_head + h[r]) * hd + 32u * i + 4u * ln;
            const vec4 o = acc[r][i] * inv;
            p.y.v[at] = o.x;
            p.y.v[at + 1u] = o.y;
            p.y.v[at + 2u] = o.z;
            p.y.v[at + 3u] = o.w;
        }
    }
}
