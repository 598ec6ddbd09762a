#version 450
// Decode matmul over int8 activations (q8_act.glsl): y[t, o] = W[o, :] . x[t, :] (+ bias[o])
// for n_tok <= TOK tokens (TOK = 1, 2, 4, 8) in one dispatch; weight types Q4_0 / Q8_0 / Q6_K
// (file layout or repacked, vk_repack.h) and Q4_K. Each row is a sequence of items (a Q4_0/Q8_0
// block of 32 weights, a 16-byte slice of a Q4_K super-block, a 4-position slice of a Q6_K half
// super-block) and its TPR invocations take items lane, lane + TPR, ...: the weights' nibbles
// are widened to int8 in registers and meet the activation words in 4-way int8 dot products
// (OpSDot, VK_KHR_shader_integer_dot_product), scaled once per item. Against the f32 matvec this
// is a few integer instructions per 4 weights instead of a dequantise, convert and FMA per
// weight, so the kernel is bound by memory, not by issue. The activations are read from memory
// (L1-resident: 4.5 KB per 4096 values), not staged. PARTS = 2, 3: as matvec.comp (q/k/v,
// gate/up in one dispatch).
// ROPE (PARTS = 3: q, k, v; or 2: q, k when v has another weight type): the rotary embedding
// of q and k and the KV cache stores done here, not by a dispatch stage of their own: a
// workgroup's rows are whole rotation pairs (adjacent rows, or rows j and j + head_dim / 2 in
// NeoX mode), so it rotates its own results; q goes to y (the roped q), k and v to the caches'
// rows n_past.. (f16 as whole 32-bit words).
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
#include "dq_group.glsl"
#include "q8_act.glsl"
layout(local_size_x_id = 1) in;
layout(constant_id = 0) const uint TYPE = 0;
layout(constant_id = 1) const uint WG = 128;
layout(constant_id = 2) const uint ROWS = 4;
layout(constant_id = 3) const uint TOK = 1;
layout(constant_id = 4) const uint SUBGROUP_ADD = 0;  // 1: TPR is a multiple of the subgroup size
layout(constant_id = 5) const uint PARTS = 1;
layout(constant_id = 6) const uint ROPE = 0;
layout(push_constant) uniform P {  // 128 bytes, the whole guaranteed push-constant range
    Uints w; Uints xq; Vec2s xd; Floats y; Floats bias;
    uint n_in; uint n_out; uint n_tok; uint row_bytes;
    uint has_bias;  // bit k: part k has a bias (bias, bias1, bias2)
    uint n_out1;
    Uints w1; Uints w2; Floats y1; Floats y2; Floats bias1; Floats bias2;  // PARTS > 1 only
    // ROPE: y1 / y2 are the K / V caches; io holds the step parameters (n_past at word 0) and
    // the cos/sin table at byte 256 * (rope >> 11); rope & 511 = head_dim, bit 9 NeoX, bit 10
    // f16 cache.
    Floats io;
    uint n_out2; uint rope;
} p;

// OpSDot with PackedVectorFormat4x8Bit: the sum of the four signed byte products of a and b.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6018, 6019],
                  id = 4450)
int sdot_packed(int a, int b, spirv_literal int packed_4x8);
int dot4(uint a, uint b) { return sdot_packed(int(a), int(b), 0); }
// Bytes 0..15 (0..63) -> bytes minus 8 (32): the add keeps every byte below 0x100, the xor flips
// the sign bit, i.e. subtracts 0x80.
uint minus8(uint v) { return (v + 0x78787878u) ^ 0x80808080u; }
uint minus32(uint v) { return (v + 0x60606060u) ^ 0x80808080u; }

const uint TPR = WG / ROWS;
const uint M4 = 0x0F0F0F0Fu;

// A Q4_0 block's 16 quant bytes as int8 weights minus 8: lo = weights 0..15 (low nibbles),
// hi = weights 16..31 (high nibbles).
void q4_0_bytes(uvec4 q, out uvec4 lo, out uvec4 hi) {
    lo = uvec4(minus8(q.x & M4), minus8(q.y & M4), minus8(q.z & M4), minus8(q.w & M4));
    hi = uvec4(minus8((q.x >> 4) & M4), minus8((q.y >> 4) & M4), minus8((q.z >> 4) & M4),
               minus8((q.w >> 4) & M4));
}
shared float red[TOK * WG];
shared float fin[TOK * ROWS];  // ROPE: the workgroup's results, then rotated

// ROPE: the row (within q or k) of index idx of the part, NeoX mode: a workgroup's ROWS / 2
// rotation pairs j0.. of one head take slots 0..ROWS/2-1 (rows j) and the rest (j + hd/2).
uint rope_row(uint idx) {
    if ((p.rope & 0x200u) == 0u) return idx;
    const uint hd = p.rope & 511u, half_hd = hd / 2u, m = ROWS / 2u;
    const uint s = idx % ROWS, pair0 = (idx / ROWS) * m;
    return (pair0 / half_hd) * hd + pair0 % half_hd + (s < m ? s : s - m + half_hd);
}

// ROPE: rotates (parts 0, 1) and stores the workgroup's results fin[k * ROWS + slot] (rows
// rope_row(base + slot), or base + slot in part 2) for the nt tokens; every invocation calls
// it (barriers), `live` is uniform.
void rope_store(uint tid, uint nt, uint part, uint base, bool live) {
    const uint hd = p.rope & 511u, half_hd = hd / 2u, m = ROWS / 2u;
    const bool neox = (p.rope & 0x200u) != 0u, f16 = (p.rope & 0x400u) != 0u;
    const uint n_past = Uints(p.io).v[0];
    const uint NQ = (TOK * ROWS + WG - 1u) / WG;
    barrier();  // fin[] complete
    float rotated[NQ];
    [[unroll]] for (uint q = 0u; q < NQ; ++q) {
        const uint idx = tid + q * WG, k = idx / ROWS, slot = idx % ROWS;
        float v = 0.0;
        if (idx < nt * ROWS) v = fin[idx];
        if (idx < nt * ROWS && part < 2u) {
            const uint row = rope_row(base + slot), e = row % hd;
            const uint ps = neox ? (slot < m ? slot + m : slot - m) : slot ^ 1u;
            const float pv = fin[k * ROWS + ps];
            const uint i = neox ? e % half_hd : e / 2u;
            const bool second = neox ? e >= half_hd : (e & 1u) != 0u;
            const uint tb = (p.rope >> 11) * 64u + (k * half_hd + i) * 2u;
            const float c = p.io.v[tb], sn = p.io.v[tb + 1u];
            v = second ? pv * sn + v * c : v * c - pv * sn;
        }
        rotated[q] = v;
    }
    barrier();  // every partner read
    [[unroll]] for (uint q = 0u; q < NQ; ++q) {
        const uint idx = tid + q * WG;
        if (idx < nt * ROWS) fin[idx] = rotated[q];
    }
    barrier();
    for (uint idx = tid; idx < nt * ROWS && live; idx += WG) {
        const uint k = idx / ROWS, slot = idx % ROWS;
        const uint row = part < 2u ? rope_row(base + slot) : base + slot;
        if (part == 0u) {
            p.y.v[k * p.n_out + row] = fin[idx];
        } else {
            const uint width = part == 1u ? p.n_out1 : p.n_out2;
            Uints cache = Uints(part == 1u ? p.y1 : p.y2);
            const uint at = (n_past + k) * width + row;
            if (!f16)
                cache.v[at] = floatBitsToUint(fin[idx]);
            else if ((slot & 1u) == 0u)  // rows row, row + 1 are slots slot, slot + 1
                cache.v[at / 2u] = packHalf2x16(vec2(fin[idx], fin[idx + 1u]));
        }
    }
}

uint items_per_row() {
    return TYPE == T_Q6_K ? p.n_in / 16u : TYPE == T_Q6_KR ? p.n_in / 64u : p.n_in / 32u;
}

// Adds item `it` of the row at byte ro to acc[k] for the TOK tokens (tokens past n_tok read
// token 0 and are not written).
void item(Uints w, uint ro, uint it, inout float acc[TOK]) {
    const uint nb = p.n_in / 32u;  // activation blocks per token
    Uvec4s w4 = Uvec4s(w), x4 = Uvec4s(p.xq);
    if (TYPE == T_Q4_0R || TYPE == T_Q8_0R || TYPE == T_Q4_0 || TYPE == T_Q8_0) {
        float d;
        uvec4 q0, q1;
        if (TYPE == T_Q4_0 || TYPE == T_Q8_0) {
            // File layout (weights used in place): 18 / 34-byte blocks, 2-byte aligned.
            const uint b = ro + it * (TYPE == T_Q4_0 ? 18u : 34u);
            d = lo_f16(rd_w(w, b));
            if (TYPE == T_Q4_0) {
                const uvec4 q = uvec4(rd_w(w, b + 2u), rd_w(w, b + 6u), rd_w(w, b + 10u),
                                      rd_w(w, b + 14u));
                q4_0_bytes(q, q0, q1);
            } else {
                q0 = uvec4(rd_w(w, b + 2u), rd_w(w, b + 6u), rd_w(w, b + 10u), rd_w(w, b + 14u));
                q1 = uvec4(rd_w(w, b + 18u), rd_w(w, b + 22u), rd_w(w, b + 26u), rd_w(w, b + 30u));
            }
        } else {
            const uint sb = ro + (it >> 3) * (TYPE == T_Q4_0R ? 144u : 272u), blk = it & 7u;
            const vec2 dd = unpackHalf2x16(w.v[(sb >> 2) + (blk >> 1)]);
            d = (blk & 1u) != 0u ? dd.y : dd.x;
            if (TYPE == T_Q4_0R) {
                const uvec4 q = w4.v[(sb + 16u + blk * 16u) >> 4];
                q4_0_bytes(q, q0, q1);
            } else {
                const uint a = (sb + 16u + blk * 32u) >> 4;
                q0 = w4.v[a];
                q1 = w4.v[a + 1u];
            }
        }
        [[unroll]] for (uint k = 0u; k < TOK; ++k) {
            const uint t = k < p.n_tok ? k : 0u, xb = t * nb + it;
            const uvec4 x0 = x4.v[2u * xb], x1 = x4.v[2u * xb + 1u];
            const int s = dot4(q0.x, x0.x) + dot4(q0.y, x0.y) + dot4(q0.z, x0.z) +
                          dot4(q0.w, x0.w) + dot4(q1.x, x1.x) + dot4(q1.y, x1.y) +
                          dot4(q1.z, x1.z) + dot4(q1.w, x1.w);
            acc[k] += d * p.xd.v[xb].x * float(s);
        }
    } else if (TYPE == T_Q4_K) {
        // Super-block {d, dmin, 12 bytes of 6-bit scales/mins, qs[128]}: item k (0..7) = bytes
        // 16j..16j+15 (j = k % 2) of chunk c = k / 2: low nibbles are positions 16j.. of
        // sub-block 2c, high nibbles of sub-block 2c + 1. A sub-block adds
        // d * scale * d_x * sum(q q_x) - dmin * min * s_x, the min term once (by j == 0).
        const uint b = it >> 3, k8 = it & 7u, c = k8 >> 1, j = k8 & 1u;
        const uint sb = ro + b * 144u;
        const uvec4 hdr = w4.v[sb >> 4];
        const uvec4 q = w4.v[(sb + 16u + 32u * c + 16u * j) >> 4];
        const uvec4 lo = q & M4, hi = (q >> 4) & M4;
        const vec2 dm = unpackHalf2x16(hdr.x);
        float sc[2], mn[2];
        [[unroll]] for (uint h = 0u; h < 2u; ++h) {
            const uint s = 2u * c + h;
            if (s < 4u) {
                sc[h] = float((hdr.y >> (8u * s)) & 63u);
                mn[h] = float((hdr.z >> (8u * s)) & 63u);
            } else {
                const uint e = (hdr.w >> (8u * (s - 4u))) & 0xFFu;
                sc[h] = float((e & 0xFu) | ((hdr.y >> (8u * (s - 4u) + 6u)) & 3u) << 4);
                mn[h] = float((e >> 4) | ((hdr.z >> (8u * (s - 4u) + 6u)) & 3u) << 4);
            }
        }
        const float d0 = dm.x * sc[0], d1 = dm.x * sc[1];
        const float m0 = j == 0u ? dm.y * mn[0] : 0.0, m1 = j == 0u ? dm.y * mn[1] : 0.0;
        [[unroll]] for (uint k = 0u; k < TOK; ++k) {
            const uint t = k < p.n_tok ? k : 0u, xb = t * nb + b * 8u + 2u * c;
            const uvec4 x0 = x4.v[2u * xb + j], x1 = x4.v[2u * (xb + 1u) + j];
            const vec2 e0 = p.xd.v[xb], e1 = p.xd.v[xb + 1u];
            const int s0 = dot4(lo.x, x0.x) + dot4(lo.y, x0.y) + dot4(lo.z, x0.z) + dot4(lo.w, x0.w);
            const int s1 = dot4(hi.x, x1.x) + dot4(hi.y, x1.y) + dot4(hi.z, x1.z) + dot4(hi.w, x1.w);
            acc[k] += d0 * e0.x * float(s0) - m0 * e0.y + d1 * e1.x * float(s1) - m1 * e1.y;
        }
    } else if (TYPE == T_Q6_KR) {
        // Repacked Q6_K (16-byte aligned bodies): item k (0..3) = half h = k / 2, positions
        // 16j..16j+15 (j = k % 2) of its four quarters, as 16-byte loads: quarter q's low bits
        // from ql[64h + 32(q & 1) + l] (high nibble when q >= 2), top bits from bits 2q of
        // qh[32h + l], scale sc[8h + j + 2q]; activation block 8b + 4h + q, words 4j..4j+3.
        const uint b = it >> 2, h = (it >> 1) & 1u, j = it & 1u;
        const uint sb = q6_body(TYPE, ro, b);
        const uvec4 la = w4.v[(sb + 64u * h + 16u * j) >> 4];
        const uvec4 lb = w4.v[(sb + 64u * h + 32u + 16u * j) >> 4];
        const uvec4 qh = w4.v[(sb + 128u + 32u * h + 16u * j) >> 4];
        const uint sw0 = w.v[(sb + 192u + 8u * h) >> 2], sw1 = w.v[(sb + 196u + 8u * h) >> 2];
        const float d = lo_f16(rd_w(w, q6_d(TYPE, ro, b)));
        const uint sh = 8u * j;  // scale bytes j, j + 2 of each word
        const float s0 = d * float(int(sw0 << (24u - sh)) >> 24);
        const float s1 = d * float(int(sw0 << (8u - sh)) >> 24);
        const float s2 = d * float(int(sw1 << (24u - sh)) >> 24);
        const float s3 = d * float(int(sw1 << (8u - sh)) >> 24);
        uvec4 v0, v1, v2, v3;
        [[unroll]] for (uint m = 0u; m < 4u; ++m) {
            v0[m] = minus32((la[m] & M4) | ((qh[m] & 0x03030303u) << 4));
            v1[m] = minus32((lb[m] & M4) | (((qh[m] >> 2) & 0x03030303u) << 4));
            v2[m] = minus32(((la[m] >> 4) & M4) | (((qh[m] >> 4) & 0x03030303u) << 4));
            v3[m] = minus32(((lb[m] >> 4) & M4) | (((qh[m] >> 6) & 0x03030303u) << 4));
        }
        [[unroll]] for (uint k = 0u; k < TOK; ++k) {
            const uint t = k < p.n_tok ? k : 0u, xb = t * nb + b * 8u + 4u * h;
            const uvec4 x0 = x4.v[2u * xb + j], x1 = x4.v[2u * (xb + 1u) + j];
            const uvec4 x2 = x4.v[2u * (xb + 2u) + j], x3 = x4.v[2u * (xb + 3u) + j];
            const int d0 = dot4(v0.x, x0.x) + dot4(v0.y, x0.y) + dot4(v0.z, x0.z) + dot4(v0.w, x0.w);
            const int d1 = dot4(v1.x, x1.x) + dot4(v1.y, x1.y) + dot4(v1.z, x1.z) + dot4(v1.w, x1.w);
            const int d2 = dot4(v2.x, x2.x) + dot4(v2.y, x2.y) + dot4(v2.z, x2.z) + dot4(v2.w, x2.w);
            const int d3 = dot4(v3.x, x3.x) + dot4(v3.y, x3.y) + dot4(v3.z, x3.z) + dot4(v3.w, x3.w);
            acc[k] += s0 * p.xd.v[xb].x * float(d0) + s1 * p.xd.v[xb + 1u].x * float(d1) +
                      s2 * p.xd.v[xb + 2u].x * float(d2) + s3 * p.xd.v[xb + 3u].x * float(d3);
        }
    } else if (TYPE == T_Q6_K) {
        // 210-byte super-block {ql[128], qh[64], int8 scales[16], d} (2-byte aligned: rd_w):
        // item k (0..15) = half h = k / 8, positions 4i..4i+3 (i = k % 8) of its four quarters:
        // quarter q's low bits from ql[64h + 32(q & 1) + l] (high nibble when q >= 2), top bits
        // from bits 2q of qh[32h + l], scale sc[8h + l / 16 + 2q]; activation block
        // 8b + 4h + q, word i.
        const uint b = it >> 4, k16 = it & 15u, h = k16 >> 3, i = k16 & 7u;
        const uint sb = ro + b * 210u;
        const uint la = rd_w(w, sb + 64u * h + 4u * i);
        const uint lb = rd_w(w, sb + 64u * h + 32u + 4u * i);
        const uint qh = rd_w(w, sb + 128u + 32u * h + 4u * i);
        const uint v0 = minus32((la & M4) | ((qh & 0x03030303u) << 4));
        const uint v1 = minus32((lb & M4) | (((qh >> 2) & 0x03030303u) << 4));
        const uint v2 = minus32(((la >> 4) & M4) | (((qh >> 4) & 0x03030303u) << 4));
        const uint v3 = minus32(((lb >> 4) & M4) | (((qh >> 6) & 0x03030303u) << 4));
        const uint sw0 = rd_w(w, sb + 192u + 8u * h), sw1 = rd_w(w, sb + 196u + 8u * h);
        const uint sh = 8u * (i >> 2);  // scale byte i / 4 (+ 2q) of the half's 8
        const float d = lo_f16(rd_w(w, q6_d(TYPE, ro, b)));
        const float s0 = d * float(int(sw0 << (24u - sh)) >> 24);
        const float s1 = d * float(int(sw0 << (8u - sh)) >> 24);
        const float s2 = d * float(int(sw1 << (24u - sh)) >> 24);
        const float s3 = d * float(int(sw1 << (8u - sh)) >> 24);
        [[unroll]] for (uint k = 0u; k < TOK; ++k) {
            const uint t = k < p.n_tok ? k : 0u, xb = t * nb + b * 8u + 4u * h;
            const uint xw = xb * 8u + i;
            acc[k] += s0 * p.xd.v[xb].x * float(dot4(v0, p.xq.v[xw])) +
                      s1 * p.xd.v[xb + 1u].x * float(dot4(v1, p.xq.v[xw + 8u])) +
                      s2 * p.xd.v[xb + 2u].x * float(dot4(v2, p.xq.v[xw + 16u])) +
                      s3 * p.xd.v[xb + 3u].x * float(dot4(v3, p.xq.v[xw + 24u]));
        }
    }
}

// Row o's sum s for token k (slot r of the workgroup): plus its bias, then out (or kept for
// rope_store).
void finish_row(uint k, uint r, uint o, uint n_out, uint part, Floats y, Floats bias, float s) {
    if (((p.has_bias >> part) & 1u) != 0u) s += bias.v[o];
    if (ROPE != 0u)
        fin[k * ROWS + r] = s;
    else
        y.v[k * n_out + o] = s;
}

void main() {
    const uint tid = gl_LocalInvocationID.x, r = tid / TPR, lane = tid % TPR;
    uint o = (gl_WorkGroupID.x + gl_WorkGroupID.z * 32768u) * ROWS + r;
    uint n_out = p.n_out, part = 0u;
    Uints w = p.w;
    Floats y = p.y, bias = p.bias;
    if (PARTS > 1u && o >= n_out) {
        o -= n_out;
        n_out = p.n_out1;
        w = p.w1;
        y = p.y1;
        bias = p.bias1;
        part = 1u;
        if (PARTS > 2u && o >= n_out) {
            o -= n_out;
            n_out = p.n_out2;
            w = p.w2;
            y = p.y2;
            bias = p.bias2;
            part = 2u;
        }
    }
    const uint base = o - r;  // the workgroup's first index in its part
    if (ROPE != 0u && part < 2u && o < n_out) o = rope_row(o);
    const uint nt = min(TOK, p.n_tok);
    const bool live = o < n_out;
    const uint ro = live ? o * p.row_bytes : 0u;
    float acc[TOK];
    [[unroll]] for (uint k = 0u; k < TOK; ++k) acc[k] = 0.0;
    if (live) {
        const uint n_items = items_per_row();
        // Two items per trip: the second item's loads issue before the first one's dots wait.
        uint it = lane;
        for (; it + TPR < n_items; it += 2u * TPR) {
            item(w, ro, it, acc);
            item(w, ro, it + TPR, acc);
        }
        if (it < n_items) item(w, ro, it, acc);
    }

    if (SUBGROUP_ADD != 0u) {
        const uint per_row = TPR / gl_SubgroupSize;  // subgroups per row
        [[unroll]] for (uint k = 0u; k < TOK; ++k) {
            const float s = subgroupAdd(acc[k]);
            if (subgroupElect()) red[k * WG + gl_SubgroupID] = s;
        }
        barrier();
        for (uint k = lane; k < nt && live; k += TPR) {
            float s = 0.0;
            for (uint j = 0u; j < per_row; ++j) s += red[k * WG + r * per_row + j];
            finish_row(k, r, o, n_out, part, y, bias, s);
        }
    } else {
        [[unroll]] for (uint k = 0u; k < TOK; ++k) red[k * WG + tid] = acc[k];
        barrier();
        for (uint st = TPR / 2u; st > 0u; st >>= 1) {
            if (lane < st)
                [[unroll]] for (uint k = 0u; k < TOK; ++k) red[k * WG + tid] += red[k * WG + tid + st];
            barrier();
        }
        for (uint k = lane; k < nt && live; k += TPR)
            finish_row(k, r, o, n_out, part, y, bias, red[k * WG + r * TPR]);
    }
    if (ROPE != 0u) rope_store(tid, nt, part, base, live);
}
