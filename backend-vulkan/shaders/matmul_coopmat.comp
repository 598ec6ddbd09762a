#version 450
// Prefill matmul on cooperative matrices (tensor cores / WMMA): y[t, o] = W[o, :] . x[t, :]
// (+ bias[o]) in tiles of 128 rows x 64 tokens. Per step of 64 inputs every invocation
// dequantises one 32-element weight group and packs two runs of 8 activations, as f16 into
// shared memory; each of the 8 subgroups then multiplies its 32 rows x 32 tokens (2 x 2
// fragments of 16 x 16, four 16-deep steps). Weights and activations are rounded to f16 (the
// accumulation stays f32), so the host runs this kernel only for quantised and f16 weights.
//
// Written against GL_NV_cooperative_matrix because Debian 12's glslang has no
// GL_KHR_cooperative_matrix; the build rewrites the SPIR-V to SPV_KHR_cooperative_matrix
// (tools/spirv_coopmat_rewrite.cpp), which is what the host enables. glslang declares the
// Vulkan memory model for these shaders, so the host enables vulkanMemoryModel with them.
// Needs subgroups of 32 (the 4 x 2 subgroup layout of a tile).
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"
#include "dq_group.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TYPE = 0;
// A's rows and B's columns (always 16) as their own constants: the rewrite to the KHR types
// tells the A, B and accumulator types apart by their operands, so A and B must not be one
// SPIR-V type (16 x 16 f16 both, they would be).
layout(constant_id = 1) const int A_ROWS = 16;
layout(constant_id = 2) const int B_COLS = 16;
layout(push_constant) uniform P {
    Uints w; Floats x; Floats y; Floats bias;
    uint n_in; uint n_out; uint n_tok; uint row_bytes; uint has_bias;
} p;

// 64 tokens a tile: 128 measured 11 % slower on the H200 (8B Q4_0 pp512 3850 against 4330).
const uint BM = 128u, BN = 64u, BK = 64u;
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

uvec4 pack8(float a, float b, float c, float d, float e, float f, float g, float h) {
    return uvec4(packHalf2x16(vec2(a, b)), packHalf2x16(vec2(c, d)), packHalf2x16(vec2(e, f)),
                 packHalf2x16(vec2(g, h)));
}

void main() {
    const uint tid = gl_LocalInvocationID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const uint sm = (sg % 4u) * 32u, sn = (sg / 4u) * (BN / 2u);  // this subgroup's rows, tokens
    MAT_C acc[2][WN];
    [[unroll]] for (uint i = 0u; i < 2u; ++i)
        [[unroll]] for (uint j = 0u; j < WN; ++j) acc[i][j] = MAT_C(0.0);

    const uint n_groups = p.n_in / 32u;
    const uint my_row = tid % BM, my_half = tid / BM;  // the group this invocation dequantises
    for (uint g0 = 0u; g0 < n_groups; g0 += 2u) {
        {
            const uint g = g0 + my_half;
            float v[32];
            if (m0 + my_row < p.n_out && g < n_groups) {
                dq_group(TYPE, p.w, (m0 + my_row) * p.row_bytes, g, v);
            } else {
                [[unroll]] for (uint e = 0u; e < 32u; ++e) v[e] = 0.0;
            }
            [[unroll]] for (uint c = 0u; c < 4u; ++c)
                ws[my_row * LDK4 + my_half * 4u + c] = pack8(v[8u * c], v[8u * c + 1u],
                    v[8u * c + 2u], v[8u * c + 3u], v[8u * c + 4u], v[8u * c + 5u],
                    v[8u * c + 6u], v[8u * c + 7u]);
        }
        // BN tokens x 64 inputs: BN / 32 runs of 8 per invocation, 8 invocations on a token.
        [[unroll]] for (uint k = 0u; k < BN / 32u; ++k) {
            const uint i = tid + k * 256u, tok = i / 8u, c = i % 8u;
            const uint t = n0 + tok, col = g0 * 32u + c * 8u;
            uvec4 q = uvec4(0u);
            if (t < p.n_tok && col < p.n_in) {
                const uint at = t * p.n_in + col;
                q = pack8(p.x.v[at], p.x.v[at + 1u], p.x.v[at + 2u], p.x.v[at + 3u],
                          p.x.v[at + 4u], p.x.v[at + 5u], p.x.v[at + 6u], p.x.v[at + 7u]);
            }
            xt[tok * LDK4 + c] = q;
        }
        barrier();
        [[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) {
            MAT_A a[2];
            MAT_B b[WN];
            [[unroll]] for (uint i = 0u; i < 2u; ++i)
                coopMatLoadNV(a[i], ws, (sm + 16u * i) * LDK4 + kk / 8u, LDK4, false);
            // B(k, n) = xt[n][k]: column-major with the token rows as columns.
            [[unroll]] for (uint j = 0u; j < WN; ++j)
                coopMatLoadNV(b[j], xt, (sn + 16u * j) * LDK4 + kk / 8u, LDK4, true);
            [[unroll]] for (uint i = 0u; i < 2u; ++i)
                [[unroll]] for (uint j = 0u; j < WN; ++j)
                    acc[i][j] = coopMatMulAddNV(a[i], b[j], acc[i][j]);
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
                if (o < p.n_out && t < p.n_tok)
                    p.y.v[t * p.n_out + o] =
                        cs[sg * 256u + idx] + (p.has_bias != 0u ? p.bias.v[o] : 0.0);
            }
            subgroupBarrier();
        }
}
