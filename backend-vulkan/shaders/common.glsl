// Shared by every shader: buffers arrive as device addresses (buffer_reference) in push
// constants, and weights are read as bytes out of 32-bit words because ggml's quant blocks are
// only 2-byte aligned (Q8_0 is 34 bytes), which plain std430 arrays cannot express.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_control_flow_attributes : require

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Uints { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ints { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Uvec4s { uvec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Vec4s { vec4 v[]; };

// ggml type ids (tandem::DType)
const uint T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q4_1 = 3, T_Q5_0 = 6, T_Q5_1 = 7, T_Q8_0 = 8,
           T_Q4_K = 12, T_Q5_K = 13, T_Q6_K = 14, T_BF16 = 30;
// Q4_0 / Q8_0 repacked at upload on discrete GPUs (vk_repack.cpp; not ggml ids): every 8 blocks
// become [8 f16 scales (16 bytes)][8 x 16 (Q4_0) or 32 (Q8_0) quant bytes], 144 / 272 bytes,
// the same size as the 8 blocks, so rows keep their length and 16-byte alignment.
const uint T_Q4_0R = 102, T_Q8_0R = 108;
// Q6_K repacked (vk_repack.cpp): every 8 super-blocks of a row become their 8 208-byte bodies
// (ql, qh, scales: 16-byte aligned) then their 8 f16 d's, 1680 bytes, the size of the 8 blocks.
const uint T_Q6_KR = 114;

// Byte offsets of super-block S's body (ql[128], qh[64], scales[16]) and of its f16 d, in a
// Q6_K row at ro (file layout: 210-byte blocks, d last) or a T_Q6_KR one.
uint q6_body(uint t, uint ro, uint S) {
    return t == T_Q6_KR ? ro + (S >> 3) * 1680u + (S & 7u) * 208u : ro + S * 210u;
}
uint q6_d(uint t, uint ro, uint S) {
    return t == T_Q6_KR ? ro + (S >> 3) * 1680u + 1664u + (S & 7u) * 2u : ro + S * 210u + 208u;
}

uint rd_u8(Uints w, uint off) { return (w.v[off >> 2] >> ((off & 3u) * 8u)) & 0xFFu; }
uint rd_u16(Uints w, uint off) { return (w.v[off >> 2] >> ((off & 2u) * 8u)) & 0xFFFFu; }
uint rd_u32(Uints w, uint off) { return rd_u16(w, off) | (rd_u16(w, off + 2u) << 16); }
float rd_f16(Uints w, uint off) { return unpackHalf2x16(rd_u16(w, off)).x; }
int rd_i8(Uints w, uint off) { return (int(rd_u8(w, off)) << 24) >> 24; }

// K-quant 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes at off.
void scale_min_k4(Uints w, uint off, uint j, out float sc, out float m) {
    if (j < 4u) {
        sc = float(rd_u8(w, off + j) & 63u);
        m = float(rd_u8(w, off + j + 4u) & 63u);
    } else {
        sc = float((rd_u8(w, off + j + 4u) & 0xFu) | ((rd_u8(w, off + j - 4u) >> 6) << 4));
        m = float((rd_u8(w, off + j + 4u) >> 4) | ((rd_u8(w, off + j) >> 6) << 4));
    }
}

// Element i of the row that starts at byte ro, for weight type t (a specialisation constant
// at every call site, so the switch folds away).
float dq(uint t, Uints w, uint ro, uint i) {
    if (t == T_F32) return uintBitsToFloat(w.v[(ro >> 2) + i]);
    if (t == T_F16) return rd_f16(w, ro + 2u * i);
    if (t == T_BF16) return uintBitsToFloat(rd_u16(w, ro + 2u * i) << 16);
    if (t == T_Q8_0) {
        uint b = ro + (i >> 5) * 34u;
        return rd_f16(w, b) * float(rd_i8(w, b + 2u + (i & 31u)));
    }
    if (t == T_Q4_0R || t == T_Q8_0R) {
        const uint sb = ro + (i >> 8) * (t == T_Q4_0R ? 144u : 272u), blk = (i >> 5) & 7u, j = i & 31u;
        const float d = rd_f16(w, sb + 2u * blk);
        if (t == T_Q8_0R) return d * float(rd_i8(w, sb + 16u + blk * 32u + j));
        uint q = rd_u8(w, sb + 16u + blk * 16u + (j & 15u));
        q = j < 16u ? (q & 15u) : (q >> 4);
        return d * (float(q) - 8.0);
    }
    if (t == T_Q4_0 || t == T_Q4_1) {
        uint j = i & 31u;
        uint b = ro + (i >> 5) * (t == T_Q4_0 ? 18u : 20u);
        uint qo = b + (t == T_Q4_0 ? 2u : 4u);
        uint q = rd_u8(w, qo + (j & 15u));
        q = j < 16u ? (q & 15u) : (q >> 4);
        if (t == T_Q4_0) return rd_f16(w, b) * (float(q) - 8.0);
        return rd_f16(w, b) * float(q) + rd_f16(w, b + 2u);
    }
    if (t == T_Q5_0 || t == T_Q5_1) {
        uint j = i & 31u;
        uint b = ro + (i >> 5) * (t == T_Q5_0 ? 22u : 24u);
        uint ho = b + (t == T_Q5_0 ? 2u : 4u);
        uint qh = rd_u32(w, ho);
        uint q = rd_u8(w, ho + 4u + (j & 15u));
        q = (j < 16u ? (q & 15u) : (q >> 4)) | (((qh >> j) & 1u) << 4);
        if (t == T_Q5_0) return rd_f16(w, b) * (float(q) - 16.0);
        return rd_f16(w, b) * float(q) + rd_f16(w, b + 2u);
    }
    if (t == T_Q4_K || t == T_Q5_K) {
        uint b = ro + (i >> 8) * (t == T_Q4_K ? 144u : 176u);
        uint e = i & 255u, c = e >> 6, l = e & 63u, hi = l >> 5;
        float sc, m;
        scale_min_k4(w, b + 4u, 2u * c + hi, sc, m);
        uint qs = b + (t == T_Q4_K ? 16u : 48u);
        uint q = rd_u8(w, qs + c * 32u + (l & 31u));
        q = hi == 0u ? (q & 15u) : (q >> 4);
        if (t == T_Q5_K) q |= ((rd_u8(w, b + 16u + (l & 31u)) >> (2u * c + hi)) & 1u) << 4;
        return rd_f16(w, b) * sc * float(q) - rd_f16(w, b + 2u) * m;
    }
    if (t == T_Q6_K || t == T_Q6_KR) {
        uint b = q6_body(t, ro, i >> 8);
        uint e = i & 255u, n = e >> 7, j = e & 127u, l = j & 31u, part = j >> 5;
        uint ql = rd_u8(w, b + n * 64u + l + ((part & 1u) != 0u ? 32u : 0u));
        ql = part < 2u ? (ql & 15u) : (ql >> 4);
        uint qh = (rd_u8(w, b + 128u + n * 32u + l) >> (2u * part)) & 3u;
        float sc = float(rd_i8(w, b + 192u + n * 8u + (l >> 4) + 2u * part));
        return rd_f16(w, q6_d(t, ro, i >> 8)) * sc * (float(ql | (qh << 4)) - 32.0);
    }
    return 0.0;
}

float silu(float x) { return x / (1.0 + exp(-x)); }
float gelu_tanh(float x) {
    const float k = 0.79788456080286535588;
    return 0.5 * x * (1.0 + tanh(k * x * (1.0 + 0.044715 * x * x)));
}
// Activation ids as tandem::Activation.
float act(uint a, float x) { return a == 0u ? silu(x) : gelu_tanh(x); }
