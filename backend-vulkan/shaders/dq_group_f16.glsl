// Whole-group dequantisation to f16 for the cooperative-matrix tiles: group g of the weight row
// at byte ro as 32 f16, 8 to a uvec4, in element order. Needs common.glsl and dq_group.glsl, and
// GL_EXT_shader_explicit_arithmetic_types_float16.

uvec4 pack8(float a, float b, float c, float d, float e, float f, float g, float h) {
    return uvec4(packHalf2x16(vec2(a, b)), packHalf2x16(vec2(c, d)), packHalf2x16(vec2(e, f)),
                 packHalf2x16(vec2(g, h)));
}

// Two weights of a repacked Q4_0 group as f16 bits: the low (shift 0) or high (4) nibbles of
// bytes 2h, 2h + 1 of word a, made 1024 + q by the f16 exponent bits, less 1032 (exact), times d
// (rounded once): the bits of d * (q - 8) in f32 rounded to f16, as dq_group then pack8 give.
uint q4_pair_f16(uint a, uint h, uint shift, f16vec2 d2) {
    const uint b = (h != 0u ? a >> 16 : a) >> shift;
    const f16vec2 v = unpackFloat2x16((b & 0xFu) | ((b << 8) & 0xF0000u) | 0x64006400u);
    return packFloat2x16((v - f16vec2(float16_t(1032.0))) * d2);
}

// A repacked Q4_0 group (weight j < 16: the low nibble of byte j, then the high nibbles) in f16
// arithmetic: ~3 instructions a pair where dq_group and pack8 spend ~5 a weight (8B pp512 +2-4 %
// on the H200; Q8_0's form measured 1-2 % slower, so it is decoded in f32 8 at a time).
void dq_group_q4_0r_f16(Uints w, uint ro, uint g, out uvec4 o[4]) {
    const Q0RGroup k = q0r_group(T_Q4_0R, w, ro, g);
    const f16vec2 d2 = f16vec2(float16_t(k.d));
    const uvec4 q = Uvec4s(w).v[k.q];
    uint r[16];
    [[unroll]] for (uint m = 0u; m < 16u; ++m)
        r[m] = q4_pair_f16(q[(m % 8u) / 2u], m % 2u, m >= 8u ? 4u : 0u, d2);
    [[unroll]] for (uint c = 0u; c < 4u; ++c)
        o[c] = uvec4(r[4u * c], r[4u * c + 1u], r[4u * c + 2u], r[4u * c + 3u]);
}

// Two weights of a repacked Q8_0 group as f16 bits: bytes 2h, 2h + 1 of word a made unsigned
// (^ 0x80) under the f16 exponent bits of 1024, less 1152 (exact: q), times d (rounded once).
uint q8_pair_f16(uint a, uint h, f16vec2 d2) {
    const uint b = (h != 0u ? a >> 16 : a) ^ 0x8080u;
    const f16vec2 v = unpackFloat2x16((b & 0xFFu) | ((b << 8) & 0xFF0000u) | 0x64006400u);
    return packFloat2x16((v - f16vec2(float16_t(1152.0))) * d2);
}

// A repacked Q8_0 group in f16 arithmetic, the bits of dq_group_f16's f32 decode.
void dq_group_q8_0r_f16(Uints w, uint ro, uint g, out uvec4 o[4]) {
    const Q0RGroup k = q0r_group(T_Q8_0R, w, ro, g);
    const f16vec2 d2 = f16vec2(float16_t(k.d));
    const uvec4 q0 = Uvec4s(w).v[k.q], q1 = Uvec4s(w).v[k.q + 1u];
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        const uint a = c < 2u ? q0[2u * c] : q1[2u * c - 4u];
        const uint b = c < 2u ? q0[2u * c + 1u] : q1[2u * c - 3u];
        o[c] = uvec4(q8_pair_f16(a, 0u, d2), q8_pair_f16(a, 1u, d2), q8_pair_f16(b, 0u, d2),
                     q8_pair_f16(b, 1u, d2));
    }
}

// Half hf of a Q4_K / Q5_K group (its elements 16 hf .. 16 hf + 15) as 16 f16, with
// dq_group_f16's bits: only that half's quant (and Q5_K's qh) bytes are loaded, so a tile that
// stages a group half by half keeps half of them live.
void dq_half_k4_f16(uint t, Uints w, uint ro, uint g, uint hf, out uvec4 o[2]) {
    K4Group k = k4_group_scales(t, w, ro, g);
    const uint b = k4_block(t, ro, g);
    k.q[0] = Uvec4s(w).v[k4_quants(t, b, g) + hf];
    if (t == T_Q5_K) k.h[0] = Uvec4s(w).v[k5_high(b) + hf];
    [[unroll]] for (uint c = 0u; c < 2u; ++c)
        o[c] = pack8(k4_value(t, k, 2u * c, 0u), k4_value(t, k, 2u * c, 1u),
                     k4_value(t, k, 2u * c, 2u), k4_value(t, k, 2u * c, 3u),
                     k4_value(t, k, 2u * c + 1u, 0u), k4_value(t, k, 2u * c + 1u, 1u),
                     k4_value(t, k, 2u * c + 1u, 2u), k4_value(t, k, 2u * c + 1u, 3u));
}

// Any type: dq_group's f32 values rounded as pack8 rounds them (the same bits). Repacked Q8_0
// (F16_DECODE without its bit) and the K-quants are decoded 8 at a time, so 8 floats are live instead of 32 beside a
// 128-token tile's 64 sums; the other types go through dq_group's 32.
void dq_group_f16(uint t, Uints w, uint ro, uint g, out uvec4 o[4]) {
    if (t == T_Q8_0R) {
        const Q0RGroup k = q0r_group(t, w, ro, g);
        const uvec4 q0 = Uvec4s(w).v[k.q], q1 = Uvec4s(w).v[k.q + 1u];
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
            const int a = int(c < 2u ? q0[2u * c] : q1[2u * c - 4u]);
            const int b = int(c < 2u ? q0[2u * c + 1u] : q1[2u * c - 3u]);
            o[c] = pack8(k.d * q8_byte(a, 0u), k.d * q8_byte(a, 1u), k.d * q8_byte(a, 2u),
                         k.d * q8_byte(a, 3u), k.d * q8_byte(b, 0u), k.d * q8_byte(b, 1u),
                         k.d * q8_byte(b, 2u), k.d * q8_byte(b, 3u));
        }
    } else if (t == T_Q4_K || t == T_Q5_K) {
        const K4Group k = k4_group(t, w, ro, g);
        [[unroll]] for (uint c = 0u; c < 4u; ++c)
            o[c] = pack8(k4_value(t, k, 2u * c, 0u), k4_value(t, k, 2u * c, 1u),
                         k4_value(t, k, 2u * c, 2u), k4_value(t, k, 2u * c, 3u),
                         k4_value(t, k, 2u * c + 1u, 0u), k4_value(t, k, 2u * c + 1u, 1u),
                         k4_value(t, k, 2u * c + 1u, 2u), k4_value(t, k, 2u * c + 1u, 3u));
    } else if (t == T_Q6_K || t == T_Q6_KR) {
        const Q6Group k = q6_group(t, w, ro, g);
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
            const uint j = 2u * c;
            const uint la = rd_w(w, k.ql + 4u * j), ha = rd_w(w, k.qh + 4u * j);
            const uint lb = rd_w(w, k.ql + 4u * j + 4u), hb = rd_w(w, k.qh + 4u * j + 4u);
            o[c] = pack8(q6_value(k, j, la, ha, 0u), q6_value(k, j, la, ha, 1u),
                         q6_value(k, j, la, ha, 2u), q6_value(k, j, la, ha, 3u),
                         q6_value(k, j + 1u, lb, hb, 0u), q6_value(k, j + 1u, lb, hb, 1u),
                         q6_value(k, j + 1u, lb, hb, 2u), q6_value(k, j + 1u, lb, hb, 3u));
        }
    } else {
        float v[32];
        dq_group(t, w, ro, g, v);
        [[unroll]] for (uint c = 0u; c < 4u; ++c)
            o[c] = pack8(v[8u * c], v[8u * c + 1u], v[8u * c + 2u], v[8u * c + 3u],
                         v[8u * c + 4u], v[8u * c + 5u], v[8u * c + 6u], v[8u * c + 7u]);
    }
}
