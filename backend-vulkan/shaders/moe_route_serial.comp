#version 450
// Softmax gating and top-k per token, one invocation per token: routers of more than 512
// experts (moe_route.comp holds up to 512 in registers).
// Ties go to the lower expert id, as the CPU backend and torch.topk do.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform P { Floats logits; Floats route; uint n_tok; uint n_expert; uint k; uint normalize; } p;
void main() {
    const uint t = gl_GlobalInvocationID.x;
    if (t >= p.n_tok) return;
    const uint lb = t * p.n_expert;
    float mx = -1e30;
    for (uint e = 0u; e < p.n_expert; ++e) mx = max(mx, p.logits.v[lb + e]);
    float sum = 0.0;
    for (uint e = 0u; e < p.n_expert; ++e) sum += exp(p.logits.v[lb + e] - mx);
    // Selection by repeated arg-max over the experts not yet chosen (k is at most a few).
    uint chosen[16];
    float wsum = 0.0;
    for (uint j = 0u; j < p.k; ++j) {
        int best = -1;
        float bv = -1e30;
        for (uint e = 0u; e < p.n_expert; ++e) {
            bool taken = false;
            for (uint c = 0u; c < j; ++c) taken = taken || chosen[c] == e;
            const float v = p.logits.v[lb + e];
            if (!taken && (best < 0 || v > bv)) { best = int(e); bv = v; }
        }
        chosen[j] = uint(best);
        wsum += exp(bv - mx) / sum;
    }
    for (uint j = 0u; j < p.k; ++j) {
        const float pr = exp(p.logits.v[lb + chosen[j]] - mx) / sum;
        p.route.v[t * 2u * p.k + 2u * j] = float(chosen[j]);
        p.route.v[t * 2u * p.k + 2u * j + 1u] = p.normalize != 0u ? pr / wsum : pr;
    }
}
