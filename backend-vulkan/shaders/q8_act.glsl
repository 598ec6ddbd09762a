// Activations quantised to int8 for the int8-dot decode matvec (matvec_q8.comp), laid out as
// the HIP backend's (hip_q8_layout.h): int8 q [n_tok * n_in] (read as 32-bit words) in halves,
// then (d, s) per 32 values [n_tok * n_in / 32] (from the values' size rounded up to 256) with
// d = max|x| / 127 and s = d * sum(q) (the K-quants' mins and Q4_0's offset need the block
// sum), as the CPU backend quantises its activations.
// Halves: per 256 values of the flat buffer (8 blocks of 32), the 8 blocks' first 16 values,
// then their second 16. Invocations taking consecutive blocks then load one half each with
// 16-byte loads that fill whole 128-byte lines, where the blocks' plain order (32 bytes each)
// made every such load span twice the lines, half used (the HIP matvec: +10 %, docs/hip.md).
// q8_store_vec4 quantises a vec4 of a row: the 8 invocations holding one 32-value block must be
// 8 consecutive lanes of a subgroup (8 divides the subgroup size) and all reach the call.
// Needs common.glsl.
#extension GL_KHR_shader_subgroup_shuffle : enable

layout(buffer_reference, std430, buffer_reference_align = 8) buffer Vec2s { vec2 v[]; };

// Block b's half h (values 16h..16h+15) as an index of 16-byte units.
uint q8_unit(uint b, uint h) { return (b >> 3) * 16u + 8u * h + (b & 7u); }
// The 32-bit word holding values 4i..4i+3.
uint q8_word(uint i) { return q8_unit(i >> 3, (i >> 2) & 1u) * 4u + (i & 3u); }

// The int8 word of v (values 4i..4i+3 of a block held by 8 consecutive lanes) and its block's
// (d, s), every lane of the 8 alike.
uint q8_quantise_vec4(vec4 v, out vec2 ds) {
    float amax = max(max(abs(v.x), abs(v.y)), max(abs(v.z), abs(v.w)));
    amax = max(amax, subgroupShuffleXor(amax, 1u));
    amax = max(amax, subgroupShuffleXor(amax, 2u));
    amax = max(amax, subgroupShuffleXor(amax, 4u));
    const float d = amax / 127.0;
    const ivec4 q = amax > 0.0 ? ivec4(roundEven(v / d)) : ivec4(0);
    int s = q.x + q.y + q.z + q.w;
    s += subgroupShuffleXor(s, 1u);
    s += subgroupShuffleXor(s, 2u);
    s += subgroupShuffleXor(s, 4u);
    ds = vec2(d, d * float(s));
    return uint(q.x & 0xFF) | (uint(q.y & 0xFF) << 8) | (uint(q.z & 0xFF) << 16) | (uint(q.w) << 24);
}

// Values 4i..4i+3 (vec4 index i of the whole activation buffer); `live`: store them.
void q8_store_vec4(vec4 v, uint i, bool live, Uints qs, Vec2s ds) {
    vec2 sc;
    const uint word = q8_quantise_vec4(v, sc);
    if (!live) return;
    qs.v[q8_word(i)] = word;
    if ((i & 7u) == 0u) ds.v[i >> 3] = sc;
}
