// The int8-dot items of the decode matvec over q8 activations, per weight type (TYPE): a
// row's items, weights() decoding one, acts() loading one activation row's words for it and
// dotq() their scaled product. Shared by matvec_q8.comp and moe_q8.comp; the including shader
// enables GL_EXT_spirv_intrinsics, includes common.glsl, dq_group.glsl and q8_act.glsl, and
// defines TYPE and push constants xq (int8 words), xd ((d, s) per 32 values) and n_in (values
// per activation row).

const uint M4 = 0x0F0F0F0Fu;

// OpSDot with PackedVectorFormat4x8Bit: the sum of the four signed byte products of a and b.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6018, 6019],
                  id = 4450)
int sdot_packed(int a, int b, spirv_literal int packed_4x8);
int dot4(uint a, uint b) { return sdot_packed(int(a), int(b), 0); }
// Bytes 0..63 -> bytes minus 32 (Q6_K's offset): the add keeps every byte below 0x100, the
// xor flips the sign bit, i.e. subtracts 0x80.
uint minus32(uint v) { return (v + 0x60606060u) ^ 0x80808080u; }

// Small integers to float without the conversion instruction, which NVIDIA issues at a quarter
// of the float rate: the value goes into the mantissa of 2^23 (unsigned) or of 2^23 + 2^22
// (signed), and that constant is subtracted. The result is exact, the same bits as float(v),
// for v < 2^23 (u2f) or |v| < 2^22 (i2f). An item's dot product is under 2^20 in size, and
// scales are bytes. Q4_K's item converts six values (two dots, four 6-bit scales and mins),
// Q4_0's one. H200, 8B decode logits the same bits on every type; gate + up Q4_K 28.9 -> 28.4 us;
// tg128 (ABBA) Q4_K 375 / 377 -> 396 / 389, Q4_0, Q4_K_M, Q8_0 and Q6_K unchanged within 1.5 %
// (docs/vulkan.md, session 32). Not measured on AMD, whose conversion is not known here to be
// slow: there this form may be one operation more per value, in kernels bound by memory.
float u2f(uint v) { return uintBitsToFloat(v | 0x4B000000u) - 8388608.0; }
float i2f(int v) { return uintBitsToFloat(uint(v + 0x4B400000)) - 12582912.0; }

// K64 (declared by the including shader): Q4_K / Q5_K items of a whole 32-byte chunk (64
// weights, both sub-blocks' quants), so the header and the 6-bit scales are decoded once per 64
// weights instead of 32.
bool k64() { return K64 != 0u && (TYPE == T_Q4_K || TYPE == T_Q5_K); }

// Q4_K / Q5_K item `it`'s super-block b, chunk c and 16-byte half j (K64: j = 0, the whole
// chunk): (b, c, j).
uvec3 k45_item(uint it) {
    return k64() ? uvec3(it >> 2, it & 3u, 0u) : uvec3(it >> 3, (it & 7u) >> 1, it & 1u);
}

uint items_per_row() {
    return TYPE == T_Q6_K ? p.n_in / 16u : TYPE == T_Q6_KR || k64() ? p.n_in / 64u : p.n_in / 32u;
}

// One item's weights as int8 words and float scales, and one token's activations for it
// (int8 words, scales and sums): which fields a type fills is in weights() / acts().
struct WQ {
    uvec4 a, b, c, d;
    vec4 s;
};
struct AQ {
    uvec4 a, b, c, d;
    vec4 e;
};

uint dot16(uvec4 w, uvec4 x) {
    return uint(dot4(w.x, x.x) + dot4(w.y, x.y) + dot4(w.z, x.z) + dot4(w.w, x.w));
}

// Q6_K: one word each of a half's four quarters as int8 weights (minus 32): low bits from
// la (quarters 0, 2: low / high nibbles) and lb (1, 3), top bits from bits 2q of qh.
uvec4 q6_quarters(uint la, uint lb, uint qh) {
    return uvec4(minus32((la & M4) | ((qh & 0x03030303u) << 4)),
                 minus32((lb & M4) | (((qh >> 2) & 0x03030303u) << 4)),
                 minus32(((la >> 4) & M4) | (((qh >> 4) & 0x03030303u) << 4)),
                 minus32(((lb >> 4) & M4) | (((qh >> 6) & 0x03030303u) << 4)));
}
// Q6_K: d times the int8 scales at bit sh of words sw0 (bytes sh/8, sh/8 + 2) and sw1 (same).
vec4 q6_scales(float d, uint sw0, uint sw1, uint sh) {
    return d * vec4(i2f(int(sw0 << (24u - sh)) >> 24), i2f(int(sw0 << (8u - sh)) >> 24),
                    i2f(int(sw1 << (24u - sh)) >> 24), i2f(int(sw1 << (8u - sh)) >> 24));
}

// Item `it` of the row at byte ro: its weights, decoded.
WQ weights(Uints w, uint ro, uint it) {
    Uvec4s w4 = Uvec4s(w);
    WQ q;
    if (TYPE == T_Q4_0R || TYPE == T_Q8_0R || TYPE == T_Q4_0 || TYPE == T_Q8_0) {
        // a: weights 0..15, b: 16..31 (Q4_0: the nibbles, their -8 left to dotq); s.x: d.
        uvec4 q0, q1;
        if (TYPE == T_Q4_0 || TYPE == T_Q8_0) {
            // File layout (weights used in place): 18 / 34-byte blocks, 2-byte aligned.
            const uint b = ro + it * (TYPE == T_Q4_0 ? 18u : 34u);
            q.s.x = lo_f16(rd_w(w, b));
            q0 = uvec4(rd_w(w, b + 2u), rd_w(w, b + 6u), rd_w(w, b + 10u), rd_w(w, b + 14u));
            if (TYPE == T_Q8_0)
                q1 = uvec4(rd_w(w, b + 18u), rd_w(w, b + 22u), rd_w(w, b + 26u), rd_w(w, b + 30u));
        } else {
            const uint sb = ro + (it >> 3) * (TYPE == T_Q4_0R ? 144u : 272u), blk = it & 7u;
            const vec2 dd = unpackHalf2x16(w.v[(sb >> 2) + (blk >> 1)]);
            q.s.x = (blk & 1u) != 0u ? dd.y : dd.x;
            if (TYPE == T_Q4_0R) {
                q0 = w4.v[(sb + 16u + blk * 16u) >> 4];
            } else {
                const uint a = (sb + 16u + blk * 32u) >> 4;
                q0 = w4.v[a];
                q1 = w4.v[a + 1u];
            }
        }
        if (TYPE == T_Q4_0 || TYPE == T_Q4_0R) {
            q.a = q0 & M4;
            q.b = (q0 >> 4) & M4;
        } else {
            q.a = q0;
            q.b = q1;
        }
    } else if (TYPE == T_Q4_K || TYPE == T_Q5_K) {
        // Super-block {d, dmin, 12 bytes of 6-bit scales/mins, (Q5_K: qh[32],) qs[128]}: item
        // k (0..7) = bytes 16j..16j+15 (j = k % 2) of chunk c = k / 2: low nibbles (a) are
        // positions 16j.. of sub-block 2c, high nibbles (b) of sub-block 2c + 1 (Q5_K: their
        // fifth bits are bits 2c / 2c + 1 of qh[16j..16j+15]); s = (d * scale, same for 2c + 1,
        // dmin * min, same), the mins only for j == 0 (a sub-block adds them once). Both
        // super-blocks (144 / 176 bytes) are 16-byte multiples: every load is 16 bytes.
        // K64: item k (0..3) = chunk c = k whole: a / b the low nibbles of its two 16-byte
        // halves (sub-block 2c), c / d the high nibbles (2c + 1); j = 0 (the mins counted once).
        const bool five = TYPE == T_Q5_K;
        const uvec3 bcj = k45_item(it);
        const uint b = bcj.x, c = bcj.y, j = bcj.z;
        const uint sb = ro + b * (five ? 176u : 144u);
        const uvec4 hdr = w4.v[sb >> 4];
        const uint q0 = (sb + (five ? 48u : 16u) + 32u * c + 16u * j) >> 4;
        const uvec4 qs = w4.v[q0];
        q.a = qs & M4;
        q.b = (qs >> 4) & M4;
        if (k64()) {
            const uvec4 qs1 = w4.v[q0 + 1u];
            q.c = q.b;
            q.b = qs1 & M4;
            q.d = (qs1 >> 4) & M4;
        }
        if (five) {
            const uvec4 qh = w4.v[(sb + 16u + 16u * j) >> 4];
            q.a |= ((qh >> (2u * c)) & 0x01010101u) << 4;
            if (k64()) {
                const uvec4 qh1 = w4.v[(sb + 32u) >> 4];
                q.b |= ((qh1 >> (2u * c)) & 0x01010101u) << 4;
                q.c |= ((qh >> (2u * c + 1u)) & 0x01010101u) << 4;
                q.d |= ((qh1 >> (2u * c + 1u)) & 0x01010101u) << 4;
            } else {
                q.b |= ((qh >> (2u * c + 1u)) & 0x01010101u) << 4;
            }
        }
        const vec2 dm = unpackHalf2x16(hdr.x);
        // The 6-bit scales and mins of sub-blocks 2c, 2c + 1 as byte pairs, without a branch
        // (c varies across a subgroup's invocations, so a branch would run both ways): for
        // c < 2 bytes 2c, 2c + 1 of scales[0..3] / [4..7]; else the low / high nibbles of
        // bytes 2(c - 2).. of scales[8..11] with the top 2 bits of those of [0..3] / [4..7].
        const uint sh = 16u * (c & 1u);
        const uint y = hdr.y >> sh, z = hdr.z >> sh, x = hdr.w >> sh;
        const bool upper = c >= 2u;
        const uint scp = upper ? (x & 0x0F0Fu) | ((y >> 2) & 0x3030u) : y & 0x3F3Fu;
        const uint mnp = upper ? ((x >> 4) & 0x0F0Fu) | ((z >> 2) & 0x3030u) : z & 0x3F3Fu;
        q.s = vec4(dm.x * u2f(scp & 0xFFu), dm.x * u2f((scp >> 8) & 0xFFu),
                   j == 0u ? dm.y * u2f(mnp & 0xFFu) : 0.0,
                   j == 0u ? dm.y * u2f((mnp >> 8) & 0xFFu) : 0.0);
    } else if (TYPE == T_Q6_KR) {
        // Repacked Q6_K (16-byte aligned bodies): item k (0..3) = half h = k / 2, positions
        // 16j..16j+15 (j = k % 2) of its four quarters (a..d), as 16-byte loads: quarter q's
        // low bits from ql[64h + 32(q & 1) + l] (high nibble when q >= 2), top bits from bits
        // 2q of qh[32h + l], scale sc[8h + j + 2q] (s).
        const uint b = it >> 2, h = (it >> 1) & 1u, j = it & 1u;
        const uint sb = q6_body(TYPE, ro, b);
        const uvec4 la = w4.v[(sb + 64u * h + 16u * j) >> 4];
        const uvec4 lb = w4.v[(sb + 64u * h + 32u + 16u * j) >> 4];
        const uvec4 qh = w4.v[(sb + 128u + 32u * h + 16u * j) >> 4];
        const uint sw0 = w.v[(sb + 192u + 8u * h) >> 2], sw1 = w.v[(sb + 196u + 8u * h) >> 2];
        const float d = lo_f16(rd_w(w, q6_d(TYPE, ro, b)));
        q.s = q6_scales(d, sw0, sw1, 8u * j);  // scale bytes j, j + 2 of each word
        [[unroll]] for (uint m = 0u; m < 4u; ++m) {
            const uvec4 v = q6_quarters(la[m], lb[m], qh[m]);
            q.a[m] = v.x;
            q.b[m] = v.y;
            q.c[m] = v.z;
            q.d[m] = v.w;
        }
    } else if (TYPE == T_Q6_K) {
        // 210-byte super-block {ql[128], qh[64], int8 scales[16], d} (2-byte aligned: rd_w):
        // item k (0..15) = half h = k / 8, positions 4i..4i+3 (i = k % 8) of its four
        // quarters (a.x..a.w): quarter q's low bits from ql[64h + 32(q & 1) + l] (high nibble
        // when q >= 2), top bits from bits 2q of qh[32h + l], scale sc[8h + l / 16 + 2q] (s).
        const uint b = it >> 4, k16 = it & 15u, h = k16 >> 3, i = k16 & 7u;
        const uint sb = ro + b * 210u;
        const uint la = rd_w(w, sb + 64u * h + 4u * i);
        const uint lb = rd_w(w, sb + 64u * h + 32u + 4u * i);
        const uint qh = rd_w(w, sb + 128u + 32u * h + 4u * i);
        q.a = q6_quarters(la, lb, qh);
        const uint sw0 = rd_w(w, sb + 192u + 8u * h), sw1 = rd_w(w, sb + 196u + 8u * h);
        const float d = lo_f16(rd_w(w, q6_d(TYPE, ro, b)));
        q.s = q6_scales(d, sw0, sw1, 8u * (i >> 2));  // scale byte i / 4 (+ 2q) of the half's 8
    }
    return q;
}

// Token t's activations for item `it` (of any row).
AQ acts(uint t, uint it) {
    const uint nb = p.n_in / 32u;  // activation blocks per token
    Uvec4s x4 = Uvec4s(p.xq);
    AQ a;
    if (TYPE == T_Q4_0R || TYPE == T_Q8_0R || TYPE == T_Q4_0 || TYPE == T_Q8_0) {
        const uint xb = t * nb + it;
        a.a = x4.v[q8_unit(xb, 0u)];
        a.b = x4.v[q8_unit(xb, 1u)];
        a.e.xy = p.xd.v[xb];
    } else if (TYPE == T_Q4_K || TYPE == T_Q5_K) {
        const uvec3 bcj = k45_item(it);
        const uint b = bcj.x, c = bcj.y, j = bcj.z;
        const uint xb = t * nb + b * 8u + 2u * c;
        if (k64()) {  // block 2c's halves (a, b), block 2c + 1's (c, d)
            a.a = x4.v[q8_unit(xb, 0u)];
            a.b = x4.v[q8_unit(xb, 1u)];
            a.c = x4.v[q8_unit(xb + 1u, 0u)];
            a.d = x4.v[q8_unit(xb + 1u, 1u)];
        } else {
            a.a = x4.v[q8_unit(xb, j)];
            a.b = x4.v[q8_unit(xb + 1u, j)];
        }
        // xb is even and the scales start on 256 bytes: both blocks' (d, s) in one 16-byte load.
        a.e = Vec4s(p.xd).v[xb >> 1];
    } else if (TYPE == T_Q6_KR) {
        const uint b = it >> 2, h = (it >> 1) & 1u, j = it & 1u;
        const uint xb = t * nb + b * 8u + 4u * h;
        a.a = x4.v[q8_unit(xb, j)];
        a.b = x4.v[q8_unit(xb + 1u, j)];
        a.c = x4.v[q8_unit(xb + 2u, j)];
        a.d = x4.v[q8_unit(xb + 3u, j)];
        const vec4 e01 = Vec4s(p.xd).v[xb >> 1], e23 = Vec4s(p.xd).v[(xb >> 1) + 1u];
        a.e = vec4(e01.x, e01.z, e23.x, e23.z);
    } else if (TYPE == T_Q6_K) {
        const uint b = it >> 4, k16 = it & 15u, h = k16 >> 3, i = k16 & 7u;
        const uint xb = t * nb + b * 8u + 4u * h, xw = xb * 8u + i;
        a.a = uvec4(p.xq.v[q8_word(xw)], p.xq.v[q8_word(xw + 8u)], p.xq.v[q8_word(xw + 16u)],
                    p.xq.v[q8_word(xw + 24u)]);
        const vec4 e01 = Vec4s(p.xd).v[xb >> 1], e23 = Vec4s(p.xd).v[(xb >> 1) + 1u];
        a.e = vec4(e01.x, e01.z, e23.x, e23.z);
    }
    return a;
}

// An item's weights times a token's activations, scaled.
float dotq(WQ q, AQ a) {
    if (TYPE == T_Q4_0 || TYPE == T_Q4_0R) {
        // sum((n - 8) q_x) d_x = d_x sum(n q_x) - 8 s_x: two float operations per block
        // instead of two integer ones per weight word.
        const float s = i2f(int(dot16(q.a, a.a) + dot16(q.b, a.b)));
        return q.s.x * (a.e.x * s - 8.0 * a.e.y);
    } else if (TYPE == T_Q8_0 || TYPE == T_Q8_0R) {
        return q.s.x * a.e.x * i2f(int(dot16(q.a, a.a) + dot16(q.b, a.b)));
    } else if ((TYPE == T_Q4_K || TYPE == T_Q5_K) && k64()) {
        return q.s.x * a.e.x * i2f(int(dot16(q.a, a.a) + dot16(q.b, a.b))) - q.s.z * a.e.y +
               q.s.y * a.e.z * i2f(int(dot16(q.c, a.c) + dot16(q.d, a.d))) - q.s.w * a.e.w;
    } else if (TYPE == T_Q4_K || TYPE == T_Q5_K) {
        return q.s.x * a.e.x * i2f(int(dot16(q.a, a.a))) - q.s.z * a.e.y +
               q.s.y * a.e.z * i2f(int(dot16(q.b, a.b))) - q.s.w * a.e.w;
    } else if (TYPE == T_Q6_KR) {
        return q.s.x * a.e.x * i2f(int(dot16(q.a, a.a))) +
               q.s.y * a.e.y * i2f(int(dot16(q.b, a.b))) +
               q.s.z * a.e.z * i2f(int(dot16(q.c, a.c))) +
               q.s.w * a.e.w * i2f(int(dot16(q.d, a.d)));
    } else {  // T_Q6_K
        return q.s.x * a.e.x * i2f(dot4(q.a.x, a.a.x)) +
               q.s.y * a.e.y * i2f(dot4(q.a.y, a.a.y)) +
               q.s.z * a.e.z * i2f(dot4(q.a.z, a.a.z)) +
               q.s.w * a.e.w * i2f(dot4(q.a.w, a.a.w));
    }
}

