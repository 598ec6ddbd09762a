#version 450
// Decode matmul over int8 activations (q8_act.glsl, in its halves layout):
// y[t, o] = W[o, :] . x[t, :] (+ bias[o]) for n_tok <= TOK tokens (TOK = 1, 2, 4, 8) in one
// dispatch; weight types Q4_0 / Q8_0 / Q6_K (file layout or repacked, vk_repack.h), Q4_K and Q5_K.
// Each row is a sequence of items (a Q4_0/Q8_0 block of 32 weights, a 32-byte chunk of a Q4_K /
// Q5_K super-block's quants (K64; 16 bytes without), a 4-position slice of a Q6_K half
// super-block): the weights' nibbles are widened to int8 in registers and meet the activation words
// in 4-way int8 dot products (OpSDot, VK_KHR_shader_integer_dot_product), scaled once per item
// (weights(), acts(), dotq()). Against the f32 matvec this is a few integer instructions per 4
// weights instead of a dequantise, convert and FMA per weight, so the kernel is bound by memory,
// not by issue. The activations are read from memory (L1-resident: 4.5 KB per 4096 values), not
// staged. Split: a row's TPR = WG / ROWS invocations take its items lane, lane + TPR, ...; or
// (SHARE, one or two tokens) all WG invocations take items of all ROWS rows (main_share). PARTS =
// 2, 3: as matvec.comp (q/k/v, gate/up in one dispatch).
// ROPE (PARTS = 3: q, k, v; or 2: q, k when v has another weight type, and 1: that v alone): the
// rotary embedding of q and k and the KV cache stores done here, not by a dispatch stage of their
// own: a workgroup's rows are whole rotation pairs (adjacent rows, or rows j and j + head_dim / 2
// in NeoX mode), so it rotates its own results; q goes to y (the roped q), k and v to the caches'
// rows n_past.. (f16 as whole 32-bit words).
// The norm folded in (RESID / NORM_EPS): an RMSNorm's 1 / rms(x) is one number per token, so a
// matvec reading the norm can dot the unnormalised x * w and scale its sums afterwards; the
// int8 rounding is per 32 values, so the projection before the norm (a workgroup of 32 rows)
// can leave the q8 activations of x * w and each block's sum of squares (floats after the
// scales), and the norm needs no dispatch of its own.
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
layout(constant_id = 7) const uint SHARE = 0;  // 1: main_share's split (needs SUBGROUP_ADD)
// RESID: main_resid (the output / down projection with the residual add and the next RMSNorm's
// q8 activations; WG = 1024, ROWS = 4, TOK <= 2). NORM_EPS (not 0): the float bits of the eps of
// an RMSNorm the activations carry unapplied (main_resid left them): every output is scaled.
layout(constant_id = 8) const uint RESID = 0;
layout(constant_id = 9) const uint NORM_EPS = 0;
// K64: Q4_K / Q5_K items of 64 weights (q8_items.glsl's k64); the host counts items alike.
layout(constant_id = 10) const uint K64 = 0;
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

// ROPE with one part: the part is v alone (a weight type of its own: Q4_K_M's Q6_K attn_v) and
// its rows go unroped into the V cache (y2, n_out2 wide), as a q/k/v dispatch's part 2 does.
uint rope_part(uint part) { return ROPE != 0u && PARTS == 1u ? 2u : part; }

const uint TPR = WG / ROWS;

shared float red[TOK * WG];

// NORM_EPS: the sums of squares of this invocation's share (the first 4 per token loaded before
// the matvec's loop, summed after it), reduced per subgroup into nred, then the scale per token.
// Every workgroup reads all n_in / 32 sums (packed two to a vec2). H200, 8B Q4_0: gate + up
// 19.7 -> 22.8 us with the fold, the same whether the sums were vec2 .x's or packed (so not
// their bytes); the RESID dispatch's last workgroup computing the scales instead (a ticket after
// a memory barrier in every workgroup) took that away but put a serial tail on the projections:
// 70B Q4_0 68.6 against 71.1 tok/s. Holding the raw pairs in registers through the loop
// (summed after it) was slower again: 70B 67.4.
const uint NSS = 4u;
float nss[NORM_EPS != 0u ? TOK * NSS : 1u];
shared float nred[NORM_EPS != 0u ? TOK * 32u : 1u];  // subgroups of 4+ lanes for WG = 128
// Token k's sums, as pairs (.x + .y) after the n_tok * n_in / 32 scales.
uint norm_at(uint k) { return p.n_tok * (p.n_in >> 5) + min(k, p.n_tok - 1u) * (p.n_in >> 6); }
void norm_load(uint tid) {
    if (NORM_EPS == 0u) return;
    const uint n_pairs = p.n_in >> 6;
    [[unroll]] for (uint k = 0u; k < TOK; ++k)
        [[unroll]] for (uint j = 0u; j < NSS; ++j) {
            const uint i = tid + j * WG;
            const vec2 s = i < n_pairs ? p.xd.v[norm_at(k) + i] : vec2(0.0);
            nss[k * NSS + j] = s.x + s.y;
        }
}
// Every invocation; a barrier must follow before norm_scale.
void norm_reduce(uint tid) {
    if (NORM_EPS == 0u) return;
    const uint n_pairs = p.n_in >> 6;
    [[unroll]] for (uint k = 0u; k < TOK; ++k) {
        float v = 0.0;
        [[unroll]] for (uint j = 0u; j < NSS; ++j) v += nss[k * NSS + j];
        for (uint i = tid + NSS * WG; i < n_pairs; i += WG) {
            const vec2 s = p.xd.v[norm_at(k) + i];
            v += s.x + s.y;
        }
        v = subgroupAdd(v);
        if (subgroupElect()) nred[k * gl_NumSubgroups + gl_SubgroupID] = v;
    }
}
float norm_scale(uint k) {
    if (NORM_EPS == 0u) return 1.0;
    float ss = 0.0;
    for (uint j = 0u; j < gl_NumSubgroups; ++j) ss += nred[k * gl_NumSubgroups + j];
    return inversesqrt(ss / float(p.n_in) + uintBitsToFloat(NORM_EPS));
}

shared float fin[TOK * ROWS];  // ROPE: the workgroup's results, then rotated

// ROPE: the row (within q or k) of index idx of the part, NeoX mode: a workgroup's ROWS / 2
// rotation pairs j0.. of one head take slots 0..ROWS/2-1 (rows j) and the rest (j + hd/2).
uint rope_row(uint idx) {
    if ((p.rope & 0x200u) == 0u) return idx;
    const uint hd = p.rope & 511u, half_hd = hd / 2u, m = ROWS / 2u;
    const uint s = idx % ROWS, pair0 = (idx / ROWS) * m;
    return (pair0 / half_hd) * hd + pair0 % half_hd + (s < m ? s : s - m + half_hd);
}

// ROPE: this invocation's cos / sin in rope_store (slot idx = tid + q * WG: token idx / ROWS)
// and n_past, asked for before the matvec's loop, so that their trip to memory is not on the
// workgroup's tail after the sums.
const uint NQ = (TOK * ROWS + WG - 1u) / WG;
float rope_cos[NQ], rope_sin[NQ];
uint rope_n_past;
void rope_prefetch(uint tid, uint part, uint base) {
    if (ROPE == 0u) return;
    rope_n_past = Uints(p.io).v[0];
    const uint hd = p.rope & 511u, half_hd = hd / 2u;
    const bool neox = (p.rope & 0x200u) != 0u;
    [[unroll]] for (uint q = 0u; q < NQ; ++q) {
        const uint idx = tid + q * WG, k = idx / ROWS, slot = idx % ROWS;
        rope_cos[q] = 1.0;
        rope_sin[q] = 0.0;
        if (idx < min(TOK, p.n_tok) * ROWS && part < 2u) {
            const uint e = rope_row(base + slot) % hd;
            const uint i = neox ? e % half_hd : e / 2u;
            const uint tb = (p.rope >> 11) * 64u + (k * half_hd + i) * 2u;
            rope_cos[q] = p.io.v[tb];
            rope_sin[q] = p.io.v[tb + 1u];
        }
    }
}

// ROPE: rotates (parts 0, 1) and stores the workgroup's results fin[k * ROWS + slot] (rows
// rope_row(base + slot), or base + slot in part 2) for the nt tokens; every invocation calls
// it (barriers), `live` is uniform.
void rope_store(uint tid, uint nt, uint part, uint base, bool live) {
    const uint hd = p.rope & 511u, half_hd = hd / 2u, m = ROWS / 2u;
    const bool neox = (p.rope & 0x200u) != 0u, f16 = (p.rope & 0x400u) != 0u;
    const uint n_past = rope_n_past;
    barrier();  // fin[] complete
    float rotated[NQ];
    [[unroll]] for (uint q = 0u; q < NQ; ++q) {
        const uint idx = tid + q * WG, k = idx / ROWS, slot = idx % ROWS;
        float v = 0.0;
        if (idx < nt * ROWS) v = fin[idx];
        if (idx < nt * ROWS && part < 2u) {
            const uint e = rope_row(base + slot) % hd;
            const uint ps = neox ? (slot < m ? slot + m : slot - m) : slot ^ 1u;
            const float pv = fin[k * ROWS + ps];
            const bool second = neox ? e >= half_hd : (e & 1u) != 0u;
            const float c = rope_cos[q], sn = rope_sin[q];
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

#include "q8_items.glsl"

// Adds item `it` of the row at byte ro to acc[k] for the TOK tokens (tokens past n_tok read
// token 0 and are not written).
void item(Uints w, uint ro, uint it, inout float acc[TOK]) {
    const WQ q = weights(w, ro, it);
    [[unroll]] for (uint k = 0u; k < TOK; ++k) acc[k] += dotq(q, acts(k < p.n_tok ? k : 0u, it));
}

// SHARE: the workgroup's rows (weights sh_w[r] at byte sh_ro[r]) and their sums for the
// tokens [r * TOK + k]; module-scope, not parameters (arrays sized by specialisation constants
// do not survive being copied into a function by glslc's optimiser).
Uints sh_w[ROWS];
uint sh_ro[ROWS];
float sh_acc[ROWS * TOK];

// SHARE: adds item `it` of the ROWS rows to sh_acc: the item's activations are loaded once
// per token and meet every row's weights.
void share_item(uint it) {
    AQ a[TOK];
    [[unroll]] for (uint k = 0u; k < TOK; ++k) a[k] = acts(k < p.n_tok ? k : 0u, it);
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        const WQ q = weights(sh_w[r], sh_ro[r], it);
        [[unroll]] for (uint k = 0u; k < TOK; ++k) sh_acc[r * TOK + k] += dotq(q, a[k]);
    }
}

// Part `part`'s rows, weights, output and bias (PARTS > 1: q/k/v or gate/up in one dispatch).
uint part_rows(uint part) { return part == 0u ? p.n_out : part == 1u ? p.n_out1 : p.n_out2; }
Uints part_w(uint part) {
    Uints w = p.w;
    if (part == 1u) w = p.w1;
    if (part == 2u) w = p.w2;
    return w;
}
Floats part_y(uint part) {
    Floats y = p.y;
    if (part == 1u) y = p.y1;
    if (part == 2u) y = p.y2;
    return y;
}
Floats part_bias(uint part) {
    Floats b = p.bias;
    if (part == 1u) b = p.bias1;
    if (part == 2u) b = p.bias2;
    return b;
}

// Row g of the launch (the parts' rows one after the other) as a row of `part` (past the end
// of the last part for a workgroup past the launch's rows).
uint locate(uint g, out uint part) {
    part = 0u;
    if (PARTS > 1u && g >= p.n_out) {
        g -= p.n_out;
        part = 1u;
        if (PARTS > 2u && g >= p.n_out1) {
            g -= p.n_out1;
            part = 2u;
        }
    }
    return g;
}

// Row o of `part`: its sum s for token k (slot r of the workgroup), plus its bias, then out (or
// kept for rope_store).
void finish_row(uint k, uint r, uint o, uint part, float s) {
    if (NORM_EPS != 0u) s *= norm_scale(k);
    if (((p.has_bias >> part) & 1u) != 0u) s += part_bias(part).v[o];
    if (ROPE != 0u)
        fin[k * ROWS + r] = s;
    else
        part_y(part).v[k * part_rows(part) + o] = s;
}

// SHARE: the workgroup's WG invocations take items tid, tid + WG, ... of all its ROWS rows
// (share_item), so an item's activations are loaded once for ROWS rows and every invocation
// keeps ROWS independent weight loads in flight; the sums are reduced per row across the
// subgroups. Against TPR invocations per row, each loading its own copy of the activations:
// H200, 8B Q4_0 gate + up 20.9 -> 19.6 µs, lm head 124 -> 88 µs, tg128 372 -> 393 tok/s.
void main_share() {
    const uint tid = gl_LocalInvocationID.x;
    const uint first = (gl_WorkGroupID.x + gl_WorkGroupID.z * 32768u) * ROWS;
    const uint total = p.n_out + (PARTS > 1u ? p.n_out1 : 0u) + (PARTS > 2u ? p.n_out2 : 0u);
    uint part0;
    const uint base = locate(first, part0);  // ROPE: parts are whole workgroups
    // Slot r's row; past the launch's rows the last part's last row (read, never written).
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        uint part;
        uint o = locate(first + r, part);
        if (ROPE != 0u && rope_part(part) < 2u) o = rope_row(base + r);
        sh_w[r] = part_w(part);
        sh_ro[r] = min(o, part_rows(part) - 1u) * p.row_bytes;
    }
    [[unroll]] for (uint i = 0u; i < ROWS * TOK; ++i) sh_acc[i] = 0.0;
    rope_prefetch(tid, rope_part(part0), base);
    norm_load(tid);
    const uint n_items = items_per_row();
    // Two items per trip: the second item's loads issue before the first one's dots wait.
    uint it = tid;
    for (; it + WG < n_items; it += 2u * WG) {
        share_item(it);
        share_item(it + WG);
    }
    if (it < n_items) share_item(it);

    // ROWS * TOK * subgroups <= TOK * WG: the host takes this split only where the subgroup
    // size is at least ROWS.
    [[unroll]] for (uint i = 0u; i < ROWS * TOK; ++i) {
        const float s = subgroupAdd(sh_acc[i]);
        if (subgroupElect()) red[i * gl_NumSubgroups + gl_SubgroupID] = s;
    }
    norm_reduce(tid);
    barrier();
    // Invocation r * TOK + k finishes row slot r for token k.
    const uint nt = min(TOK, p.n_tok), r = tid / TOK, k = tid % TOK;
    if (tid < ROWS * TOK && k < nt && first + r < total) {
        float s = 0.0;
        for (uint j = 0u; j < gl_NumSubgroups; ++j) s += red[tid * gl_NumSubgroups + j];
        uint part;
        uint o = locate(first + r, part);
        if (ROPE != 0u && rope_part(part) < 2u) o = rope_row(base + r);
        finish_row(k, r, o, part, s);
    }
    if (ROPE != 0u) rope_store(tid, nt, rope_part(part0), base, first < total);
}

// RESID: workgroup b takes rows 32b..32b+31 (a whole q8 block of the output): its eight groups
// of 128 invocations run main_share's loop over 4 rows each; then invocation k * 32 + j holds
// row 32b + j of token k: y = resid (y1) + W x (+ bias), written; the q8 block of y * w (w:
// bias1 when has_bias bit 1; values at w1, (d, s) as words at w2) and the block's sum of squares
// (w2, floats after the n_tok * n_out / 32 scales) for the matvecs reading the norm.
shared float rv[2u * 32u], rsq[2u * 32u];
void main_resid() {
    const uint tid = gl_LocalInvocationID.x, grp = tid / 128u, gt = tid % 128u;
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.z * 32768u;
    const uint first = wg * 32u + grp * ROWS;
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        sh_w[r] = p.w;
        sh_ro[r] = (first + r) * p.row_bytes;
    }
    [[unroll]] for (uint i = 0u; i < ROWS * TOK; ++i) sh_acc[i] = 0.0;
    // Invocation k * 32 + j's bias, residual and norm weight (row 32 wg + j, token k), asked for
    // before the loop: after the sums they would be a trip to memory on every workgroup's tail.
    const uint nt = min(TOK, p.n_tok), k = tid / 32u, j = tid % 32u;
    const uint row = wg * 32u + j, kk = min(k, nt - 1u);
    float pre_bias = 0.0, pre_resid = 0.0, pre_nw = 1.0;
    if (k < TOK) {
        if ((p.has_bias & 1u) != 0u) pre_bias = p.bias.v[row];
        pre_resid = p.y1.v[kk * p.n_out + row];
        if ((p.has_bias & 2u) != 0u) pre_nw = p.bias1.v[row];
    }
    const uint n_items = items_per_row();
    uint it = gt;
    for (; it + 128u < n_items; it += 256u) {
        share_item(it);
        share_item(it + 128u);
    }
    if (it < n_items) share_item(it);
    [[unroll]] for (uint i = 0u; i < ROWS * TOK; ++i) {
        const float s = subgroupAdd(sh_acc[i]);
        if (subgroupElect()) red[i * gl_NumSubgroups + gl_SubgroupID] = s;
    }
    barrier();
    const uint spg = 128u / gl_SubgroupSize;
    if (k < TOK) {
        const uint g = j / ROWS, r = j % ROWS;
        float v = 0.0;
        for (uint s = 0u; s < spg; ++s) v += red[(r * TOK + k) * gl_NumSubgroups + g * spg + s];
        if ((p.has_bias & 1u) != 0u) v += pre_bias;
        v += pre_resid;
        if (k < nt) p.y.v[k * p.n_out + row] = v;
        rv[k * 32u + j] = v * pre_nw;
        rsq[k * 32u + j] = v * v;
    }
    barrier();
    // Invocation k * 8 + c: values 4c..4c+3 of token k's block (8 consecutive lanes a block).
    if (tid < 8u * TOK) {
        const uint k2 = tid / 8u, c = tid % 8u, at = k2 * 32u + 4u * c;
        vec2 sc;
        const uint word = q8_quantise_vec4(vec4(rv[at], rv[at + 1u], rv[at + 2u], rv[at + 3u]), sc);
        if (k2 < nt) {
            const uint i = (k2 * p.n_out + wg * 32u) / 4u + c, b = i >> 3;
            p.w1.v[q8_word(i)] = word;
            if (c == 0u) {
                float ss = 0.0;
                for (uint e = 0u; e < 32u; ++e) ss += rsq[k2 * 32u + e];
                p.w2.v[2u * b] = floatBitsToUint(sc.x);
                p.w2.v[2u * b + 1u] = floatBitsToUint(sc.y);
                p.w2.v[2u * nt * (p.n_out >> 5) + b] = floatBitsToUint(ss);
            }
        }
    }
}

void main() {
    if (RESID != 0u) {
        main_resid();
        return;
    }
    if (SHARE != 0u) {
        main_share();
        return;
    }
    const uint tid = gl_LocalInvocationID.x, r = tid / TPR, lane = tid % TPR;
    uint part;
    uint o = locate((gl_WorkGroupID.x + gl_WorkGroupID.z * 32768u) * ROWS + r, part);
    const uint n_out = part_rows(part);
    Uints w = part_w(part);
    const uint base = o - r;  // the workgroup's first index in its part
    if (ROPE != 0u && rope_part(part) < 2u && o < n_out) o = rope_row(o);
    const uint nt = min(TOK, p.n_tok);
    const bool live = o < n_out;
    const uint ro = live ? o * p.row_bytes : 0u;
    float acc[TOK];
    [[unroll]] for (uint k = 0u; k < TOK; ++k) acc[k] = 0.0;
    rope_prefetch(tid, rope_part(part), base);
    norm_load(tid);
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
    norm_reduce(tid);  // the barriers below order it before finish_row

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
            finish_row(k, r, o, part, s);
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
            finish_row(k, r, o, part, red[k * WG + r * TPR]);
    }
    if (ROPE != 0u) rope_store(tid, nt, rope_part(part), base, live);
}
