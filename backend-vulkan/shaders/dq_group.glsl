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
                v[4u * k + i] = d * float((q << (24 - 8 * int(i))) >> 24);
        }
    } else if (t == T_Q4_0R || t == T_Q8_0R) {
        // Repacked (common.glsl): the group's quants are one (Q4_0) or two (Q8_0) 16-byte loads.
        const uint sb = ro + (g >> 3) * (t == T_Q4_0R ? 144u : 272u), blk = g & 7u;
        const vec2 dd = unpackHalf2x16(w.v[(sb >> 2) + (blk >> 1)]);
        const float d = (blk & 1u) != 0u ? dd.y : dd.x;
        if (t == T_Q4_0R) {
            const uvec4 q = Uvec4s(w).v[(sb + 16u + blk * 16u) >> 4];
            [[unroll]] for (uint k = 0u; k < 4u; ++k)
                [[unroll]] for (uint i = 0u; i < 4u; ++i) {
                    v[4u * k + i] = d * (float((q[k] >> (8u * i)) & 15u) - 8.0);
                    v[4u * k + i + 16u] = d * (float((q[k] >> (8u * i + 4u)) & 15u) - 8.0);
                }
        } else {
            const uint a = (sb + 16u + blk * 32u) >> 4;
            const uvec4 q0 = Uvec4s(w).v[a], q1 = Uvec4s(w).v[a + 1u];
            [[unroll]] for (uint k = 0u; k < 8u; ++k) {
                const int q = int(k < 4u ? q0[k] : q1[k - 4u]);
                [[unroll]] for (uint i = 0u; i < 4u; ++i)
                    v[4u * k + i] = d * float((q << (24 - 8 * int(i))) >> 24);
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
        // 256-element super-block, 8 groups: d, dmin (f16), 12 bytes of 6-bit scales/mins,
        // [qh[32]: bit s of byte l is element l of group s's fifth bit], qs[128]: group s
        // uses bytes 32*(s/2)..+32, low nibbles for even s, high for odd.
        // Super-blocks are 144 / 176 bytes (multiples of 16) and rows whole super-blocks, so
        // with 16-byte aligned weight buffers the header (d, dmin, 12 scale bytes) is one
        // 16-byte load and the group's 32 quant bytes (and Q5_K's 32 qh bytes) two each.
        const uint bsz = t == T_Q4_K ? 144u : 176u;
        const uint b = ro + (g >> 3) * bsz, s = g & 7u;
        Uvec4s w4 = Uvec4s(w);
        const uvec4 hdr = w4.v[b >> 4];
        const uint dm = hdr.x;
        // scale_min_k4 on bytes 4..15 held in hdr.yzw
        const uint s0 = hdr.y, s1 = hdr.z, s2 = hdr.w;
        float sc, mn;
        if (s < 4u) {
            sc = float((s0 >> (8u * s)) & 63u);
            mn = float((s1 >> (8u * s)) & 63u);
        } else {
            const uint j = s - 4u;
            const uint e = (s2 >> (8u * j)) & 0xFFu;
            sc = float((e & 0xFu) | (((s0 >> (8u * j)) >> 6) & 3u) << 4);
            mn = float((e >> 4) | (((s1 >> (8u * j)) >> 6) & 3u) << 4);
        }
        const float d = lo_f16(dm) * sc, m = hi_f16(dm) * mn;
        const uint qs_at = b + (t == T_Q4_K ? 16u : 48u) + (s >> 1) * 32u;
        const uint shift = (s & 1u) * 4u;
        const uvec4 qa = w4.v[qs_at >> 4], qb = w4.v[(qs_at >> 4) + 1u];
        uvec4 ha = uvec4(0u), hb = uvec4(0u);
        if (t == T_Q5_K) {
            ha = w4.v[(b + 16u) >> 4];
            hb = w4.v[((b + 16u) >> 4) + 1u];
        }
        [[unroll]] for (uint k = 0u; k < 8u; ++k) {
            const uint q = k < 4u ? qa[k] : qb[k - 4u];
            const uint qh = t == T_Q5_K ? (k < 4u ? ha[k] : hb[k - 4u]) : 0u;
            [[unroll]] for (uint i = 0u; i < 4u; ++i) {
                uint x = (q >> (8u * i + shift)) & 15u;
                if (t == T_Q5_K) x |= ((qh >> (8u * i + s)) & 1u) << 4;
                v[4u * k + i] = d * float(x) - m;
            }
        }
    } else if (t == T_Q6_K || t == T_Q6_KR) {
        // 210-byte super-block: ql[128], qh[64], scales[16] (int8), d (f16) (T_Q6_KR: the body
        // and d apart, common.glsl). Group s: half n = s/4, part = s%4; element l: low 4 bits
        // from ql[64n + 32(part&1) + l] (low nibble for part < 2), high 2 bits from
        // qh[128 + 32n + l] >> 2*part, scale scales[8n + l/16 + 2*part].
        const uint b = q6_body(t, ro, g >> 3), s = g & 7u, n = s >> 2, part = s & 3u;
        const float d = lo_f16(rd_w(w, q6_d(t, ro, g >> 3)));
        const uint sw = rd_w(w, b + 192u + n * 8u + 2u * part);
        const float d0 = d * float(int(sw << 24) >> 24), d1 = d * float(int(sw << 16) >> 24);
        const uint ql_at = b + n * 64u + (part & 1u) * 32u, qh_at = b + 128u + n * 32u;
        const uint lshift = part < 2u ? 0u : 4u, hshift = 2u * part;
        [[unroll]] for (uint k = 0u; k < 8u; ++k) {
            const uint ql = rd_w(w, ql_at + 4u * k), qh = rd_w(w, qh_at + 4u * k);
            [[unroll]] for (uint i = 0u; i < 4u; ++i) {
                const uint x = ((ql >> (8u * i + lshift)) & 15u) |
                               (((qh >> (8u * i + hshift)) & 3u) << 4);
                v[4u * k + i] = (k < 4u ? d0 : d1) * (float(x) - 32.0);
            }
        }
    } else {
        [[unroll]] for (uint e = 0u; e < 32u; ++e) v[e] = 0.0;
    }
}
