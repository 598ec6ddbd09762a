#version 450
// Split-K decode attention (flash-decoding), pass 1: workgroup (split s, kv head block, token t)
// attends the query heads of one GQA group (up to GMAX of them) over its share of the cached
// positions, so each K/V row is read once for the whole group and a step has n_split times more
// workgroups than heads. Scores take 8 invocations per position (coalesced K reads, short
// dependent chains: a share is often only 16-40 positions). Writes per head an unnormalised partial (max m, sum l, acc[head_dim])
// that attention_combine.comp merges. n_past comes from the step parameters, and the share of a
// split is computed here from it, so recorded commands serve every step.
#include "common.glsl"
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint KV_F16 = 1;
const uint WG = 128u, GMAX = 8u, MAX_HD = 256u, MIN_SHARE = 16u;
const uint PARTS = 8u, PP = WG / PARTS;  // score pass: PARTS invocations x PP positions
layout(push_constant) uniform P {
    Floats q; Uints k; Uints v; Floats part; Uints step;  // step.v[0] = n_past
    uint n_tok; uint n_head; uint n_kv_head; uint head_dim; uint window; uint n_split;
    float scale; float softcap;
} p;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Quads { uvec4 v[]; };
shared float qs[GMAX * MAX_HD];
shared float s[GMAX * WG];    // scores, then probabilities, of the tile's positions
shared float red[GMAX * WG];  // score parts, reductions; at the end the lanes' V sums

float kv_at(Uints c, uint elem) {
    return KV_F16 != 0u ? unpackHalf2x16(c.v[elem >> 1] >> ((elem & 1u) * 16u)).x
                        : uintBitsToFloat(c.v[elem]);
}

// Max (is_max) or sum over the workgroup of x[g] for the first nh heads; every invocation gets
// it. Register arrays are indexed by unrolled constants only (a dynamic index spills them).
void reduce(inout float x[GMAX], uint nh, uint tid, bool is_max) {
    [[unroll]] for (uint g = 0u; g < GMAX; ++g)
        if (g < nh) red[g * WG + tid] = x[g];
    barrier();
    for (uint st = WG / 2u; st > 0u; st >>= 1) {
        if (tid < st)
            for (uint g = 0u; g < nh; ++g) {
                const float a = red[g * WG + tid], b = red[g * WG + tid + st];
                red[g * WG + tid] = is_max ? max(a, b) : a + b;
            }
        barrier();
    }
    [[unroll]] for (uint g = 0u; g < GMAX; ++g)
        if (g < nh) x[g] = red[g * WG];
    barrier();
}

void main() {
    const uint tid = gl_LocalInvocationID.x, hd = p.head_dim, split = gl_WorkGroupID.x;
    const uint group = p.n_head / p.n_kv_head, blocks = (group + GMAX - 1u) / GMAX;
    const uint kvh = gl_WorkGroupID.y / blocks, h0 = kvh * group + (gl_WorkGroupID.y % blocks) * GMAX;
    const uint nh = min(GMAX, kvh * group + group - h0), t = gl_WorkGroupID.z;
    const uint pos = p.step.v[0] + t;
    const uint lo = p.window > 0u && pos + 1u > p.window ? pos + 1u - p.window : 0u;
    const uint len = pos + 1u - lo;
    const uint share = max((len + p.n_split - 1u) / p.n_split, MIN_SHARE);
    const uint begin = min(lo + split * share, pos + 1u), end = min(begin + share, pos + 1u);
    const uint kv_width = p.n_kv_head * hd;
    for (uint i = tid; i < nh * hd; i += WG)
        qs[(i / hd) * MAX_HD + i % hd] = p.q.v[(t * p.n_head + h0) * hd + i];
    barrier();
    // V: invocation = (lane, pair w); each lane takes every lanes-th position of a tile.
    const uint pairs = hd / 2u, lanes = WG / pairs, lane = tid / pairs, w = tid % pairs;
    const bool v_live = lane < lanes;
    float m[GMAX], l[GMAX];
    vec2 acc[GMAX];
    [[unroll]] for (uint g = 0u; g < GMAX; ++g) {
        m[g] = -1e30;
        l[g] = 0.0;
        acc[g] = vec2(0.0);
    }
    const bool wide_k = KV_F16 != 0u && hd % 8u == 0u;
    for (uint base = begin; base < end; base += WG) {
        const uint cnt = min(WG, end - base);
        // Scores: PARTS invocations per position, each a partial dot over every PARTS-th
        // 8-dim chunk (neighbours read neighbouring 16 bytes of one K row), summed through
        // red[] ([part][position][head]) into s[head][position].
        for (uint p0 = 0u; p0 < cnt; p0 += PP) {
            const uint jj = tid / PARTS, c = tid % PARTS, j = p0 + jj;
            float sc[GMAX];
            [[unroll]] for (uint g = 0u; g < GMAX; ++g) sc[g] = 0.0;
            if (j < cnt) {
                const uint kb = (base + j) * kv_width + kvh * hd;
                if (wide_k) {
                    for (uint d = c * 8u; d < hd; d += PARTS * 8u) {
                        const uvec4 wv = Quads(p.k).v[(kb + d) >> 3];
                        const vec2 a = unpackHalf2x16(wv.x), b = unpackHalf2x16(wv.y);
                        const vec2 cc = unpackHalf2x16(wv.z), e = unpackHalf2x16(wv.w);
                        [[unroll]] for (uint g = 0u; g < GMAX; ++g) {
                            if (g >= nh) break;
                            const uint o = g * MAX_HD + d;
                            sc[g] += qs[o] * a.x + qs[o + 1u] * a.y + qs[o + 2u] * b.x +
                                     qs[o + 3u] * b.y + qs[o + 4u] * cc.x + qs[o + 5u] * cc.y +
                                     qs[o + 6u] * e.x + qs[o + 7u] * e.y;
                        }
                    }
                } else {
                    for (uint d = c; d < hd; d += PARTS) {
                        const float kd = kv_at(p.k, kb + d);
                        [[unroll]] for (uint g = 0u; g < GMAX; ++g) {
                            if (g >= nh) break;
                            sc[g] += qs[g * MAX_HD + d] * kd;
                        }
                    }
                }
            }
            [[unroll]] for (uint g = 0u; g < GMAX; ++g) red[(c * PP + jj) * GMAX + g] = sc[g];
            barrier();
            {
                const uint g = tid / PP, jr = tid % PP;  // WG = GMAX * PP invocations
                if (g < nh && p0 + jr < cnt) {
                    float x = 0.0;
                    for (uint k = 0u; k < PARTS; ++k) x += red[(k * PP + jr) * GMAX + g];
                    x *= p.scale;
                    if (p.softcap > 0.0) x = p.softcap * tanh(x / p.softcap);
                    s[g * WG + p0 + jr] = x;
                }
            }
            barrier();
        }
        float sc[GMAX];
        [[unroll]] for (uint g = 0u; g < GMAX; ++g) sc[g] = g < nh && tid < cnt ? s[g * WG + tid] : -1e30;
        float mx[GMAX];
        [[unroll]] for (uint g = 0u; g < GMAX; ++g) mx[g] = sc[g];
        reduce(mx, nh, tid, true);
        float sum[GMAX], f[GMAX];
        [[unroll]] for (uint g = 0u; g < GMAX; ++g) {
            const float m_new = max(m[g], mx[g]);
            f[g] = exp(m[g] - m_new);
            m[g] = m_new;
            const float e = tid < cnt ? exp(sc[g] - m_new) : 0.0;
            if (g < nh) s[g * WG + tid] = e;
            sum[g] = e;
        }
        reduce(sum, nh, tid, false);  // its barriers also publish s[]
        [[unroll]] for (uint g = 0u; g < GMAX; ++g) {
            l[g] = l[g] * f[g] + sum[g];
            acc[g] *= f[g];
        }
        if (v_live) {
            const uint vb = base * kv_width + kvh * hd + 2u * w;
            for (uint j = lane; j < cnt; j += lanes) {
                vec2 vv;
                if (KV_F16 != 0u) {
                    vv = unpackHalf2x16(p.v.v[(vb + j * kv_width) >> 1]);
                } else {
                    const uint e = vb + j * kv_width;
                    vv = vec2(uintBitsToFloat(p.v.v[e]), uintBitsToFloat(p.v.v[e + 1u]));
                }
                [[unroll]] for (uint g = 0u; g < GMAX; ++g) {
                    if (g >= nh) break;
                    acc[g] += s[g * WG + j] * vv;
                }
            }
        }
        barrier();  // s[] is rewritten by the next tile
    }
    // Sum the lanes' accumulators ([lane][g][pair]: x halves in red[], y halves in s[]), then
    // write the partials.
    if (v_live)
        [[unroll]] for (uint g = 0u; g < GMAX; ++g) {
            if (g >= nh) break;
            red[(lane * GMAX + g) * pairs + w] = acc[g].x;
            s[(lane * GMAX + g) * pairs + w] = acc[g].y;
        }
    barrier();
    for (uint i = tid; i < nh * hd; i += WG) {
        const uint g = i / hd, d = i % hd, pw = d / 2u;
        float a = 0.0;
        for (uint ln = 0u; ln < lanes; ++ln) {
            const uint at = (ln * GMAX + g) * pairs + pw;
            a += (d & 1u) == 0u ? red[at] : s[at];
        }
        const uint row = (t * p.n_head + h0 + g) * p.n_split + split;
        p.part.v[row * hd + d] = a;
    }
    if (tid < nh) {
        const uint row = (t * p.n_head + h0 + tid) * p.n_split + split;
        const uint ml = p.n_tok * p.n_head * p.n_split * hd + 2u * row;
        p.part.v[ml] = m[tid];
        p.part.v[ml + 1u] = l[tid];
    }
}
