#version 450
// Prefill matmul on cooperative matrices (tensor cores / WMMA): y[t, o] = W[o, :] . x[t, :]
// (+ bias[o]) in tiles of 128 rows x BN (64 or 128) tokens. Per step of 64 inputs every
// invocation dequantises one 32-element weight group and packs BN / 32 runs of 8 activations, as
// f16 into shared memory; each of the 8 subgroups then multiplies its 32 rows x BN / 2 tokens
// (2 x BN / 32 fragments of 16 x 16, four 16-deep steps). Weights and activations are rounded
// to f16 (the accumulation stays f32; activations beyond f16's range saturate at +-65504, as
// HIP's tiles), so the host runs this kernel only for quantised and f16 weights. The activations
// are read 16 bytes at a time (x 16-byte aligned: the host checks): f32 (clamped here), or with
// X16 f16 rows to_f16.comp made (dense prefill; the clamp here cost 13 % of an 8B pp512 on the
// H200).
//
// Written against GL_NV_cooperative_matrix because Debian 12's glslang has no
// GL_KHR_cooperative_matrix; the build rewrites the SPIR-V to SPV_KHR_cooperative_matrix
// (tools/spirv_coopmat_rewrite.cpp), which is what the host enables. glslang declares the
// Vulkan memory model for these shaders, so the host enables vulkanMemoryModel with them.
// Needs subgroups of 32 (the 4 x 2 subgroup layout of a tile).
// MOE = 1: an expert FFN's prefill matmul. Workgroup (row tile, listed tile j, part) multiplies
// expert e's rows (w, or w1 for part 1: up) by the activation rows of up to 64 of its slots, as
// moe_lists.comp listed them (tile j = (e, s0): slots s0.. of e's run): the token's x (per_token:
// row slot / k) or the slot's own row; it writes each slot's output row (y, or y1), times the
// slot's route weight where weighted (down; moe_slot_sum.comp adds a token's slots).
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"
#include "dq_group.glsl"
#include "dq_group_f16.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TYPE = 0;
// A's rows and B's columns (always 16) as their own constants: the rewrite to the KHR types
// tells the A, B and accumulator types apart by their operands, so A and B must not be one
// SPIR-V type (16 x 16 f16 both, they would be).
layout(constant_id = 1) const int A_ROWS = 16;
layout(constant_id = 2) const int B_COLS = 16;
layout(constant_id = 3) const uint MOE = 0;
// Bit 0: repacked Q4_0 groups decoded straight to f16 (dq_group_q4_0r_f16), bit 1: repacked Q8_0
// (dq_group_q8_0r_f16); else through f32 (dq_group_f16: the same bits; TANDEM_VK_COOPMAT_F16DQ
// sets the bits, for comparisons).
layout(constant_id = 4) const uint F16_DECODE = 3;
// 1: x holds f16 rows already (to_f16.comp, saturated), one 16-byte load for 8 values.
layout(constant_id = 5) const uint X16 = 0;
// Tokens a tile: 64, or 128 for dense steps of more than 64 tokens (each weight dequantised once
// per 128 tokens, each A fragment meeting twice the B fragments; MOE keeps 64, its lists' unit).
layout(constant_id = 6) const uint BN = 64u;
// 4: the four 16-deep product steps of a 64-input step rolled, not unrolled: fewer fragments in
// flight, fewer registers. The H200's driver gave the 128-token tile of repacked Q4_0 130
// registers an invocation unrolled (one 256-invocation workgroup an SM), 122 rolled (two): 8B
// pp512 9914 -> 11169 tok/s, the same bits (docs/vulkan.md, session 27); repacked Q8_0 decoded
// to f16 and repacked Q6_K likewise (session 28). 2: the activations staged before the weights
// (+1-2 % measured; not a default). 8: Q4_K / Q5_K groups staged half by half (dq_half_k4_f16:
// half the quant bytes live). vk_matmul_plan.cpp picks them (coopmat_stage).
layout(constant_id = 7) const uint STAGE = 0u;
layout(push_constant) uniform P {
    Uints w; Floats x; Floats y; Floats bias;
    uint n_in; uint n_out; uint n_tok; uint row_bytes; uint has_bias;
    // Not MOE: the 32-input groups a split sums (0: all; else even, whole 64-input steps). Split
    // z = gl_WorkGroupID.z takes groups [z k_groups, (z + 1) k_groups) into y + z n_tok n_out,
    // which split_sum.comp adds with the bias (short prompts: their grids are small).
    uint k_groups;
    // MOE only: moe_lists.comp's lists (offsets, slots at slots_at, tiles at tiles_at), the
    // route, up's weights and output; expert_bytes apart in w / w1.
    Uints lists; Floats route; Uints w1; Floats y1;
    uint k; uint per_token; uint weighted; uint expert_bytes; uint slots_at; uint tiles_at;
} p;

const uint BM = 128u, BK = 64u;
const uint WN = BN / 32u;        // 16-token fragments per subgroup (8 subgroups: 4 x 2)
// Tiles as uvec4s of 8 halves (16-byte stores; the loads reinterpret them as f16). A padded
// row is 9 of them, 144 bytes: the 8 rows a quarter-subgroup stores at once fill 32 banks.
const uint LDK4 = BK / 8u + 1u;
shared uvec4 ws[BM * LDK4];      // [row][k / 8] of the current 64 inputs
shared uvec4 xt[BN * LDK4];      // [token][k / 8]
shared float cs[8u * 256u];      // a 16 x 16 result fragment per subgroup, token-major

// 3: subgroup scope (gl_ScopeSubgroup needs GL_KHR_memory_scope_semantics for the name only)
#define MAT_A fcoopmatNV<16, 3, A_ROWS, 16>
#define MAT_B fcoopmatNV<16, 3, 16, B_COLS>
#define MAT_C fcoopmatNV<32, 3, 16, 16>

const uint NONE = 0xFFFFFFFFu;

// Run k of the activations' staging: BN / 32 runs of 8 per invocation, 8 invocations on a token
// (a token's 8 inputs at column g0 * 32 + c * 8 as f16 into xt).
void stage_x(uint tid, uint k, uint n0, uint g0, uint base, uint live) {
    const uint i = tid + k * 256u, tok = i / 8u, c = i % 8u;
    const uint col = g0 * 32u + c * 8u;
    uint t = n0 + tok;  // the activation row
    if (MOE != 0u) {
        const uint slot = tok < live ? p.lists.v[p.slots_at + base + tok] : NONE;
        t = slot == NONE ? NONE : (p.per_token != 0u ? slot / p.k : slot);
    }
    uvec4 q = uvec4(0u);
    if (X16 != 0u) {
        if (t < p.n_tok && col < p.n_in) q = Uvec4s(p.x).v[(t * p.n_in + col) / 8u];
    } else if ((MOE != 0u ? t != NONE : t < p.n_tok) && col < p.n_in) {
        // Two 16-byte loads (the host keeps x 16-byte aligned): eight 4-byte loads here had the
        // H100 at 0.76x the pp512 (6140 against 8050 tok/s, Q4_0).
        const uint at = (t * p.n_in + col) / 4u;
        // Saturated at f16's largest finite value (as HIP's tiles): packHalf2x16 makes an
        // activation beyond it inf, and the row's outputs inf or NaN.
        const vec4 a = clamp(Vec4s(p.x).v[at], -65504.0, 65504.0),
                   b = clamp(Vec4s(p.x).v[at + 1u], -65504.0, 65504.0);
        q = pack8(a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w);
    }
    xt[tok * LDK4 + c] = q;
}

void main() {
    const uint tid = gl_LocalInvocationID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint m0 = gl_WorkGroupID.x * BM;
    uint n0 = gl_WorkGroupID.y * BN;
    // MOE: the tile's expert, its first slot in the lists and its live slots (the others NONE).
    Uints w = p.w;
    Floats y = p.y;
    uint wbase = 0u, base = 0u, live = 0u;
    if (MOE != 0u) {
        const uint j = gl_WorkGroupID.y;
        if (j >= p.lists.v[p.tiles_at]) return;  // past the listed tiles: the whole workgroup
        const uint e = p.lists.v[p.tiles_at + 1u + 2u * j];
        base = p.lists.v[e] + p.lists.v[p.tiles_at + 2u + 2u * j];
        live = min(BN, p.lists.v[e + 1u] - base);
        wbase = e * p.expert_bytes;
        n0 = 0u;
        if (gl_WorkGroupID.z != 0u) w = p.w1, y = p.y1;
    }
    const uint sm = (sg % 4u) * 32u, sn = (sg / 4u) * (BN / 2u);  // this subgroup's rows, tokens
    MAT_C acc[2][WN];
    [[unroll]] for (uint i = 0u; i < 2u; ++i)
        [[unroll]] for (uint j = 0u; j < WN; ++j) acc[i][j] = MAT_C(0.0);

    const uint n_groups = p.n_in / 32u;
    const uint z = MOE != 0u ? 0u : gl_WorkGroupID.z;
    const uint kg = p.k_groups == 0u ? n_groups : p.k_groups;
    const uint g_end = min(n_groups, (z + 1u) * kg);
    const uint y0 = z * p.n_tok * p.n_out;  // this split's part of y
    const uint my_row = tid % BM, my_half = tid / BM;  // the group this invocation dequantises
    // The weights' staging: invocation (my_row, my_half)'s group of the step, as f16 into ws.
    // Each branch computes its own g, bounds and row offset: hoisted above the branch (one
    // review's tidy-up) the H200's driver gave the tiles more registers, 8B pp512 -8 % (Q4_0)
    // and -10 % (Q8_0) (docs/vulkan.md, session 29).
#define STAGE_W                                                                              \
    {                                                                                        \
        if ((STAGE & 8u) != 0u && (TYPE == T_Q4_K || TYPE == T_Q5_K)) {                      \
            const uint g = g0 + my_half;                                                     \
            const bool have = m0 + my_row < p.n_out && g < g_end;                            \
            const uint ro = wbase + (m0 + my_row) * p.row_bytes;                             \
            [[dont_unroll]] for (uint hf = 0u; hf < 2u; ++hf) {                              \
                uvec4 o[2] = uvec4[2](uvec4(0u), uvec4(0u));                                 \
                if (have) dq_half_k4_f16(TYPE, w, ro, g, hf, o);                             \
                ws[my_row * LDK4 + my_half * 4u + 2u * hf] = o[0];                           \
                ws[my_row * LDK4 + my_half * 4u + 2u * hf + 1u] = o[1];                      \
            }                                                                                \
        } else {                                                                             \
            const uint g = g0 + my_half;                                                     \
            uvec4 o[4] = uvec4[4](uvec4(0u), uvec4(0u), uvec4(0u), uvec4(0u));               \
            if (m0 + my_row < p.n_out && g < g_end) {                                        \
                const uint ro = wbase + (m0 + my_row) * p.row_bytes;                         \
                if ((F16_DECODE & 1u) != 0u && TYPE == T_Q4_0R)                              \
                    dq_group_q4_0r_f16(w, ro, g, o);                                         \
                else if ((F16_DECODE & 2u) != 0u && TYPE == T_Q8_0R)                         \
                    dq_group_q8_0r_f16(w, ro, g, o);                                         \
                else                                                                         \
                    dq_group_f16(TYPE, w, ro, g, o);                                         \
            }                                                                                \
            [[unroll]] for (uint c = 0u; c < 4u; ++c)                                        \
                ws[my_row * LDK4 + my_half * 4u + c] = o[c];                                 \
        }                                                                                    \
    }
    for (uint g0 = z * kg; g0 < g_end; g0 += 2u) {
        if ((STAGE & 2u) == 0u) STAGE_W
        // BN tokens x 64 inputs: BN / 32 runs of 8 per invocation, 8 invocations on a token.
        [[unroll]] for (uint k = 0u; k < BN / 32u; ++k) stage_x(tid, k, n0, g0, base, live);
        if ((STAGE & 2u) != 0u) STAGE_W
        barrier();
        // One 16-deep product step kk: each subgroup's 2 x WN fragments (B(k, n) = xt[n][k]:
        // column-major with the token rows as columns).
#define PRODUCTS                                                                             \
    {                                                                                        \
        MAT_A a[2];                                                                          \
        [[unroll]] for (uint i = 0u; i < 2u; ++i)                                            \
            coopMatLoadNV(a[i], ws, (sm + 16u * i) * LDK4 + kk / 8u, LDK4, false);           \
        [[unroll]] for (uint j = 0u; j < WN; ++j) {                                          \
            MAT_B b;                                                                         \
            coopMatLoadNV(b, xt, (sn + 16u * j) * LDK4 + kk / 8u, LDK4, true);               \
            [[unroll]] for (uint i = 0u; i < 2u; ++i)                                        \
                acc[i][j] = coopMatMulAddNV(a[i], b, acc[i][j]);                             \
        }                                                                                    \
    }
        if ((STAGE & 4u) != 0u) {
            [[dont_unroll]] for (uint kk = 0u; kk < BK; kk += 16u) PRODUCTS
        } else {
            [[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) PRODUCTS
        }
        barrier();
    }
    // Each fragment through the subgroup's slot of shared memory, so the tile's row and token
    // tails and the bias need no special case.
    [[unroll]] for (uint i = 0u; i < 2u; ++i)
        [[unroll]] for (uint j = 0u; j < WN; ++j) {
            coopMatStoreNV(acc[i][j], cs, sg * 256u, 16u, true);  // (m, n) at n * 16 + m
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            [[unroll]] for (uint e = 0u; e < 8u; ++e) {
                const uint idx = lane + 32u * e;
                const uint o = m0 + sm + 16u * i + idx % 16u, t = n0 + sn + 16u * j + idx / 16u;
                if (MOE != 0u) {
                    if (o < p.n_out && t < live) {
                        const uint slot = p.lists.v[p.slots_at + base + t];
                        const float v = cs[sg * 256u + idx];
                        y.v[slot * p.n_out + o] =
                            p.weighted != 0u ? v * p.route.v[2u * slot + 1u] : v;
                    }
                } else if (o < p.n_out && t < p.n_tok) {
                    p.y.v[y0 + t * p.n_out + o] =
                        cs[sg * 256u + idx] + (p.has_bias != 0u ? p.bias.v[o] : 0.0);
                }
            }
            subgroupBarrier();
        }
}
