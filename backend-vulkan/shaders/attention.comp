#version 450
// Causal attention of one (token, head) per workgroup over the KV cache (cache row = position),
// with GQA, sliding window and softcap. Positions go in chunks of CHUNK with an online softmax,
// so any context length fits in shared memory; each invocation owns head_dim/64 output dims.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint KV_F16 = 1;
const uint CHUNK = 256u, MAX_HD = 256u, DPT = MAX_HD / 64u;
layout(push_constant) uniform P {
    Floats q; Uints k; Uints v; Floats y; Uints step;  // step.v[0] = n_past
    uint n_tok; uint n_head; uint n_kv_head; uint head_dim; uint window;
    float scale; float softcap;
} p;
shared float s[CHUNK];
shared float qs[MAX_HD];
shared float red[64];

layout(buffer_reference, std430, buffer_reference_align = 16) buffer Quads { uvec4 v[]; };

// q . K[row at element kb] for an f16 cache with head_dim % 8 == 0: 16-byte loads (8 halves
// each), 8x fewer load instructions than element by element (decode attention is load-bound).
float dot_k_f16x8(Quads k, uint kb, uint hd) {
    float dot = 0.0;
    for (uint d = 0u; d < hd; d += 8u) {
        const uvec4 w = k.v[(kb + d) >> 3];
        const vec2 a = unpackHalf2x16(w.x), b = unpackHalf2x16(w.y);
        const vec2 c = unpackHalf2x16(w.z), e = unpackHalf2x16(w.w);
        dot += qs[d] * a.x + qs[d + 1u] * a.y + qs[d + 2u] * b.x + qs[d + 3u] * b.y +
               qs[d + 4u] * c.x + qs[d + 5u] * c.y + qs[d + 6u] * e.x + qs[d + 7u] * e.y;
    }
    return dot;
}

float kv_at(Uints c, uint elem) {
    return KV_F16 != 0u ? unpackHalf2x16(c.v[elem >> 1] >> ((elem & 1u) * 16u)).x
                        : uintBitsToFloat(c.v[elem]);
}

float reduce_max(float x, uint tid) {
    red[tid] = x;
    barrier();
    for (uint st = 32u; st > 0u; st >>= 1) {
        if (tid < st) red[tid] = max(red[tid], red[tid + st]);
        barrier();
    }
    float r = red[0];
    barrier();
    return r;
}
float reduce_sum(float x, uint tid) {
    red[tid] = x;
    barrier();
    for (uint st = 32u; st > 0u; st >>= 1) {
        if (tid < st) red[tid] += red[tid + st];
        barrier();
    }
    float r = red[0];
    barrier();
    return r;
}

void main() {
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * 32768u;  // token * n_head + head
    if (r >= p.n_tok * p.n_head) return;
    const uint tid = gl_LocalInvocationID.x, hd = p.head_dim;
    const uint t = r / p.n_head, h = r % p.n_head, kvh = h / (p.n_head / p.n_kv_head);
    const uint pos = p.step.v[0] + t;
    const uint lo = p.window > 0u && pos + 1u > p.window ? pos + 1u - p.window : 0u;
    const uint kv_width = p.n_kv_head * hd;
    const bool wide_k = KV_F16 != 0u && hd % 8u == 0u;  // K rows start 16-byte aligned then
    const bool pair_v = KV_F16 != 0u && hd % 2u == 0u;  // V read as f16 pairs, one word each
    for (uint d = tid; d < hd; d += 64u) qs[d] = p.q.v[r * hd + d];
    barrier();
    float m = -1e30, l = 0.0;
    float acc[DPT];
    for (uint k = 0u; k < DPT; ++k) acc[k] = 0.0;
    for (uint base = lo; base <= pos; base += CHUNK) {
        const uint cnt = min(CHUNK, pos - base + 1u);
        float local_max = -1e30;
        for (uint j = tid; j < cnt; j += 64u) {
            const uint kb = (base + j) * kv_width + kvh * hd;
            float dot = 0.0;
            if (wide_k) {
                dot = dot_k_f16x8(Quads(p.k), kb, hd);
            } else {
                for (uint d = 0u; d < hd; ++d) dot += qs[d] * kv_at(p.k, kb + d);
            }
            float sc = dot * p.scale;
            if (p.softcap > 0.0) sc = p.softcap * tanh(sc / p.softcap);
            s[j] = sc;
            local_max = max(local_max, sc);
        }
        const float m_new = max(m, reduce_max(local_max, tid));
        float local_sum = 0.0;
        for (uint j = tid; j < cnt; j += 64u) {
            const float e = exp(s[j] - m_new);
            s[j] = e;
            local_sum += e;
        }
        const float chunk_sum = reduce_sum(local_sum, tid);  // its barriers publish s[]
        const float f = exp(m - m_new);
        l = l * f + chunk_sum;
        if (pair_v) {  // acc[2k], acc[2k+1]: dims 2w, 2w+1 of word w = tid + 64k (one load)
            for (uint k = 0u; k < DPT / 2u; ++k) {
                const uint w = tid + 64u * k;
                if (2u * w >= hd) break;
                vec2 a = vec2(acc[2u * k], acc[2u * k + 1u]) * f;
                const uint vb = (base * kv_width + kvh * hd) / 2u + w, vstride = kv_width / 2u;
                uint j = 0u;
                for (; j + 4u <= cnt; j += 4u) {  // 4 loads in flight before their FMAs
                    const uint w0 = p.v.v[vb + j * vstride], w1 = p.v.v[vb + (j + 1u) * vstride];
                    const uint w2 = p.v.v[vb + (j + 2u) * vstride], w3 = p.v.v[vb + (j + 3u) * vstride];
                    a += s[j] * unpackHalf2x16(w0) + s[j + 1u] * unpackHalf2x16(w1) +
                         s[j + 2u] * unpackHalf2x16(w2) + s[j + 3u] * unpackHalf2x16(w3);
                }
                for (; j < cnt; ++j) a += s[j] * unpackHalf2x16(p.v.v[vb + j * vstride]);
                acc[2u * k] = a.x;
                acc[2u * k + 1u] = a.y;
            }
        } else {
            for (uint k = 0u; k < DPT; ++k) {
                const uint d = tid + 64u * k;
                if (d >= hd) break;
                float a = acc[k] * f;
                for (uint j = 0u; j < cnt; ++j) a += s[j] * kv_at(p.v, (base + j) * kv_width + kvh * hd + d);
                acc[k] = a;
            }
        }
        m = m_new;
        barrier();
    }
    for (uint k = 0u; k < DPT; ++k) {
        const uint d = pair_v ? 2u * (tid + 64u * (k / 2u)) + (k & 1u) : tid + 64u * k;
        if (d < hd) p.y.v[r * hd + d] = acc[k] / l;
    }
}
