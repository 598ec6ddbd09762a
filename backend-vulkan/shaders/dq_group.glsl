// Whole-group dequantisation for the matmul kernels: the 32 consecutive elements of group g
// (elements 32g .. 32g+31) of the weight row that starts at byte ro. Each group's bytes are read
// as whole 32-bit words, once (dq() in common.glsl reads a word per element); blocks are only
// 2-byte aligned for Q4_0/Q5_0/Q8_0/Q6_K, so rd_w() funnel-shifts two aligned words then.
// Needs common.glsl. Rows must be whole groups (n_in % 32 == 0).

// Bytes [off, off+4) as one word, off even.
uint rd_w(Uints w, uint off) {
    const uint a = off >> 2;
    if ((off & 2u) == 0u) return w.v[a];
    return (w.v[a] >> 16) | (w.v[a + 1u] << 16);
}
float lo_f16(uint word) { return unpackHalf2x16(word).x; }
float hi_f16(uint word) { return unpackHalf2x16(word).y; }

// Group g of a repacked Q4_0 / Q8_0 row at ro (common.glsl): its scale and where its quants lie.
struct Q0RGroup {
    float d;
    uint q;  // 16-byte index of the quants: one uvec4 (Q4_0), two (Q8_0)
};
Q0RGroup q0r_group(uint t, Uints w, uint ro, uint g) {
    const uint sb = ro + (g >> 3) * (t == T_Q4_0R ? 144u : 272u), blk = g & 7u;
    const vec2 dd = unpackHalf2x16(w.v[(sb >> 2) + (blk >> 1)]);
    Q0RGroup k;
    k.d = (blk & 1u) != 0u ? dd.y : dd.x;
    k.q = (sb + 16u + blk * (t == T_Q4_0R ? 16u : 32u)) >> 4;
    return k;
}
// Byte i of a word of Q8_0 quants, sign-extended.
float q8_byte(int q, uint i) { return float((q << (24 - 8 * int(i))) >> 24); }

// Group g of a Q4_K/Q5_K row at ro: 256-element super-blocks of 8 groups, d, dmin (f16), 12
// bytes of 6-bit scales/mins, [qh[32]: bit s of byte l is element l of group s's fifth bit],
// qs[128]: group s uses bytes 32*(s/2)..+32, low nibbles for even s, high for odd.
// Super-blocks are 144 / 176 bytes (multiples of 16) and rows whole super-blocks, so with
// 16-byte aligned weight buffers the header (d, dmin, 12 scale bytes) is one 16-byte load and
// the group's 32 quant bytes (and Q5_K's 32 qh bytes) two each.
struct K4Group {
    float d, m;    // element = d * q - m
    uvec4 q[2];    // the group's 32 quant bytes
    uvec4 h[2];    // Q5_K: the super-block's 32 qh bytes (else zero)
    uint s;        // the group in its super-block
};
// The super-block of group g at row byte ro; the first uvec4 of the group's quant bytes, and of
// Q5_K's qh bytes, in super-block b.
uint k4_block(uint t, uint ro, uint g) {
    return ro + (g >> 3) * (t == T_Q4_K ? 144u : 176u);
}
uint k4_quants(uint t, uint b, uint g) {
    return (b + (t == T_Q4_K ? 16u : 48u) + ((g & 7u) >> 1) * 32u) >> 4;
}
uint k5_high(uint b) {
    return (b + 16u) >> 4;
}
// The group's scale and min (d, m) and place (s); no quant bytes (q, h zero).
K4Group k4_group_scales(uint t, Uints w, uint ro, uint g) {
    const uint b = k4_block(t, ro, g), s = g & 7u;
    const uvec4 hdr = Uvec4s(w).v[b >> 4];
    // scale_min_k4 on bytes 4..15 held in hdr.yzw
    float sc, mn;
    if (s < 4u) {
        sc = float((hdr.y >> (8u * s)) & 63u);
        mn = float((hdr.z >> (8u * s)) & 63u);
    } else {
        const uint j = s - 4u;
        const uint e = (hdr.w >> (8u * j)) & 0xFFu;
        sc = float((e & 0xFu) | (((hdr.y >> (8u * j)) >> 6) & 3u) << 4);
        mn = float((e >> 4) | (((hdr.z >> (8u * j)) >> 6) & 3u) << 4);
    }
    K4Group k;
    k.d = lo_f16(hdr.x) * sc;
    k.m = hi_f16(hdr.x) * mn;
    k.q[0] = k.q[1] = k.h[0] = k.h[1] = uvec4(0u);
    k.s = s;
    return k;
}
K4Group k4_group(uint t, Uints w, uint ro, uint g) {
    K4Group k = k4_group_scales(t, w, ro, g);
    const uint b = k4_block(t, ro, g), qs = k4_quants(t, b, g);
    k.q[0] = Uvec4s(w).v[qs];
    k.q[1] = Uvec4s(w).v[qs + 1u];
    if (t == T_Q5_K) {
        k.h[0] = Uvec4s(w).v[k5_high(b)];
        k.h[1] = Uvec4s(w).v[k5_high(b) + 1u];
    }
    return k;
}
// Element 4j + i of the group (j < 8: its quant word, and Q5_K's qh word, j).
float k4_value(uint t, K4Group k, uint j, uint i) {
    const uint q = k.q[j / 4u][j % 4u], qh = k.h[j / 4u][j % 4u];
    uint x = (q >> (8u * i + (k.s & 1u) * 4u)) & 15u;
    if (t == T_Q5_K) x |= ((qh >> (8u * i + k.s)) & 1u) << 4;
    return k.d * float(x) - k.m;
}

// Group g of a Q6_K row at ro: 210-byte super-blocks of ql[128], qh[64], scales[16] (int8), d
// (f16) (T_Q6_KR: the body and d apart, common.glsl). Group s: half n = s/4, part = s%4;
// element l: low 4 bits from ql[64n + 32(part&1) + l] (low nibble for part < 2), high 2 bits
// from qh[128 + 32n + l] >> 2*part, scale scales[8n + l/16 + 2*part].
struct Q6Group {
    float d0, d1;          // the scales of elements 0..15 and 16..31
    uint ql, qh;           // byte offsets of the group's 32 ql and qh bytes (2-byte aligned)
    uint lshift, hshift;
};
Q6Group q6_group(uint t, Uints w, uint ro, uint g) {
    const uint b = q6_body(t, ro, g >> 3), s = g & 7u, n = s >> 2, part = s & 3u;
    const float d = lo_f16(rd_w(w, q6_d(t, ro, g >> 3)));
    const uint sw = rd_w(w, b + 192u + n * 8u + 2u * part);
    Q6Group k;
    k.d0 = d * float(int(sw << 24) >> 24);
    k.d1 = d * float(int(sw << 16) >> 24);
    k.ql = b + n * 64u + (part & 1u) * 32u;
    k.qh = b + 128u + n * 32u;
    k.lshift = part < 2u ? 0u : 4u;
    k.hshift = 2u * part;
    return k;
}
// Element 4j + i of the group from its ql and qh words j.
float q6_value(Q6Group k, uint j, uint ql, uint qh, uint i) {
    const uint x = ((ql >> (8u * i + k.lshift)) & 15u) | (((qh >> (8u * i + k.hshift)) & 3u) << 4);
    return (j < 4u ? k.d0 : k.d1) * (float(x) - 32.0);
}

void dq_group(uint t, Uints w, uint ro, uint g, out float v[32]) {
    if (t == T_F32) {
        const uint b = (ro >> 2) + g * 32u;
        [[unroll]] for (uint e = 0u; e < 32u; ++e) v[e] = uintBitsToFloat(w.v[b + e]);
    } else if (t == T_F16 || t == T_BF16) {
        const uint b = ro + g * 64u;
        [[unroll]] for (uint k = 0u; k < 16u; ++k) {
            const uint q = rd_w(w, b + 4u * k);
            if (t == T_F16) {
                const vec2 h = unpackHalf2x16(q);
                v[2u * k] = h.x;
                v[2u * k + 1u] = h.y;
            } else {
                v[2u * k] = uintBitsToFloat(q << 16);
                v[2u * k + 1u] = uintBitsToFloat(q & 0xFFFF0000u);
            }
        }
    } else if (t == T_Q8_0) {
        const uint b = ro + g * 34u;
        const float d = lo_f16(rd_w(w, b));
        [[unroll]] for (uint k = 0u; k < 8u; ++k) {
            const int q = int(rd_w(w, b + 2u + 4u * k));
            [[unroll]] for (uint i = 0u; i < 4u; ++i)
                v[4u * k + i] = d * q8_byte(q, i);
        }
    } else if (t == T_Q4_0R || t == T_Q8_0R) {
        const Q0RGroup k = q0r_group(t, w, ro, g);
        if (t == T_Q4_0R) {
            const uvec4 q = Uvec4s(w).v[k.q];
            [[unroll]] for (uint j = 0u; j < 4u; ++j)
                [[unroll]] for (uint i = 0u; i < 4u; ++i) {
                    v[4u * j + i] = k.d * (float((q[j] >> (8u * i)) & 15u) - 8.0);
                    v[4u * j + i + 16u] = k.d * (float((q[j] >> (8u * i + 4u)) & 15u) - 8.0);
                }
        } else {
            const uvec4 q0 = Uvec4s(w).v[k.q], q1 = Uvec4s(w).v[k.q + 1u];
            [[unroll]] for (uint j = 0u; j < 8u; ++j) {
                const int q = int(j < 4u ? q0[j] : q1[j - 4u]);
                [[unroll]] for (uint i = 0u; i < 4u; ++i) v[4u * j + i] = k.d * q8_byte(q, i);
            }
        }
    } else if (t == T_Q4_0 || t == T_Q4_1 || t == T_Q5_0 || t == T_Q5_1) {
        // block: d (f16), [m (f16)], [qh (32 bits)], qs[16]: element j<16 is the low nibble of
        // byte j, element j+16 the high nibble; qh bit j is element j's fifth bit.
        const uint bsz = t == T_Q4_0 ? 18u : t == T_Q4_1 ? 20u : t == T_Q5_0 ? 22u : 24u;
        const uint b = ro + g * bsz;
        const uint dm = rd_w(w, b);
        const float d = lo_f16(dm);
        const bool has_m = t == T_Q4_1 || t == T_Q5_1;
        const bool five = t == T_Q5_0 || t == T_Q5_1;
        const float m = has_m ? hi_f16(dm) : 0.0;
        const uint qh_at = b + (has_m ? 4u : 2u);
        const uint qh = five ? rd_w(w, qh_at) : 0u;
        const uint qs_at = qh_at + (five ? 4u : 0u);
        const float off = t == T_Q4_0 ? -8.0 : t == T_Q5_0 ? -16.0 : 0.0;
        [[unroll]] for (uint k = 0u; k < 4u; ++k) {
            const uint q = rd_w(w, qs_at + 4u * k);
            [[unroll]] for (uint i = 0u; i < 4u; ++i) {
                const uint j = 4u * k + i;
                uint lo = (q >> (8u * i)) & 15u, hi = (q >> (8u * i + 4u)) & 15u;
                if (five) {
                    lo |= ((qh >> j) & 1u) << 4;
                    hi |= ((qh >> (j + 16u)) & 1u) << 4;
                }
                v[j] = d * (float(lo) + off) + m;
                v[j + 16u] = d * (float(hi) + off) + m;
            }
        }
    } else if (t == T_Q4_K || t == T_Q5_K) {
        const K4Group k = k4_group(t, w, ro, g);
        [[unroll]] for (uint j = 0u; j < 8u; ++j)
            [[unroll]] for (uint i = 0u; i < 4u; ++i) v[4u * j + i] = k4_value(t, k, j, i);
    } else if (t == T_Q6_K || t == T_Q6_KR) {
        const Q6Group k = q6_group(t, w, ro, g);
        [[unroll]] for (uint j = 0u; j < 8u; ++j) {
            const uint ql = rd_w(w, k.ql + 4u * j), qh = rd_w(w, k.qh + 4u * j);
            [[unroll]] for (uint i = 0u; i < 4u; ++i) v[4u * j + i] = q6_value(k, j, ql, qh, i);
        }
    } else {
        [[unroll]] for (uint e = 0u; e < 32u; ++e) v[e] = 0.0;
    }
}
