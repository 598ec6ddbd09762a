#pragma once
// Launchers of the HIP kernels (device pointers, one stream). Every launcher enqueues work on
// `s` and returns at once; errors surface at the step's synchronisation. Shapes follow the step
// graph: activations are row-major [rows, cols] f32; a weight's type is the layout its kernels
// read: its file type, or a repacked one (kQ4_0R / kQ8_0R, hip_packed.h).
#include <cstdint>
#include <string>

#include "hip_packed.h"
#include "tandem/common/dtype.h"
#include "tandem/common/error.h"

namespace tandem::hip {

// Grid limits both platforms share (x up to 2^31-1 blocks, y and z up to 65535).
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridY = 65535;

// Launchers check their arguments before enqueueing anything: a bad shape is a tandem::Error
// naming the op, never an out-of-bounds kernel.
inline void launch_require(bool ok, const char* op, const std::string& what) {
    if (!ok) throw Error(std::string("hip backend: ") + op + ": " + what);
}

// out[i] = a[i] + b[i] (add) or a[i] * b[i] (mul); n elements.
void launch_binary(bool mul, const float* a, const float* b, int64_t n, float* out, hipStream_t s);
// out[i] = a[i] * k.
void launch_scale(const float* a, float k, int64_t n, float* out, hipStream_t s);
// out[i] = cap * tanh(a[i] / cap).
void launch_softcap(const float* a, float cap, int64_t n, float* out, hipStream_t s);
// out[i] = act(gate[i]) * up[i]; act 0 = SiLU, 1 = GELU (tanh approximation).
void launch_gated(int act, const float* gate, const float* up, int64_t n, float* out,
                  hipStream_t s);
// Each group of `group` elements divided by its RMS (eps inside the root), times w[0..group).
void launch_rms_norm(const float* x, const float* w, int64_t group, int64_t n_groups, float eps,
                     float* out, hipStream_t s);
// out[t, :] = f32(table[ids[t], :]); table [n_rows, n_in] of `type`; ids outside the table
// give zero rows (the host checks ids it can see).
void launch_get_rows(DType type, const void* table, int64_t n_in, int64_t n_rows,
                     const int32_t* ids, int64_t n, float* out, hipStream_t s);
// out[t, o] = sum_i W[o, i] x[t, i] (+ bias[o]); W [n_out, n_in] of `type`, x [n_tok, n_in].
// mma: prefill (9+ tokens) may take the matrix-unit kernel (launch_mat_mul_mma), which rounds
// weights and activations to f16; the backend sets it where the kernel passed its check.
// split_scratch (split_floats floats, or null): room where the tiled kernel may sum parts of the
// inputs apart when its grid is too small for the device (mat_mul_split_floats() says how much).
// How the matrix-unit prefill reads its inputs (the same bits every way).
struct MmaInputs {
    const uint16_t* x16 = nullptr;  // x as f16 (launch_to_f16), read instead of x; or null
    bool f32_decode = false;        // repacked Q4_0 / Q8_0 through f32 (else straight to f16)
    bool wide = false;              // tiles of 128 tokens past 64 tokens (else always 64)
};
void launch_mat_mul(DType type, const void* w, int64_t n_in, int64_t n_out, const float* x,
                    int64_t n_tok, const float* bias, float* out, hipStream_t s, bool mma = false,
                    float* split_scratch = nullptr, uint64_t split_floats = 0,
                    const MmaInputs& mma_in = {});
// Floats of split scratch the tiled or the matrix-unit kernel would use for this shape (0: they
// run unsplit).
uint64_t mat_mul_split_floats(int64_t n_in, int64_t n_out, int64_t n_tok);
// Fast paths of launch_mat_mul (hip_matmul.hip). Each returns false, enqueueing nothing, for a
// type, shape or alignment it does not cover. Decode matvec: n_tok <= kMatvecMaxTokens.
constexpr int64_t kMatvecMaxTokens = 8;
bool launch_matvec(DType type, const void* w, int64_t n_in, int64_t n_out, const float* x,
                   int64_t n_tok, const float* bias, float* out, hipStream_t s);
bool launch_mat_mul_tiled(DType type, const void* w, int64_t n_in, int64_t n_out, const float* x,
                          int64_t n_tok, const float* bias, float* out, hipStream_t s,
                          float* split_scratch = nullptr, uint64_t split_floats = 0);
// Prefill on the matrix units (hip_matmul_mma.hip, hip_mma.h): f16 weights and activations, f32
// sums; not f32 / bf16 weights, rows of a multiple of 32. mma_kind(device) launches a probe: which
// instruction the device's compilation got (0: none, the kernel is empty there);
// mma_kind_name() says it in words.
// Where its grid is small (short prompts) it splits the inputs into parts in split_scratch
// (split_floats floats; mat_mul_mma_split_floats() says how many it would use, 0: none) and sums
// them with launch_split_sum.
bool launch_mat_mul_mma(DType type, const void* w, int64_t n_in, int64_t n_out, const float* x,
                        int64_t n_tok, const float* bias, float* out, hipStream_t s,
                        const MmaInputs& in = {}, float* split_scratch = nullptr,
                        uint64_t split_floats = 0);
uint64_t mat_mul_mma_split_floats(int64_t n_in, int64_t n_out, int64_t n_tok);
// out[i] = sum over z < splits of parts[z n + i], in split order (+ bias[i % n_out]).
void launch_split_sum(const float* parts, int splits, int64_t n, int64_t n_out, const float* bias,
                      float* out, hipStream_t s);
// y[i] = x[i] as f16 bits (saturated at +-65504, round to nearest: what the matrix-unit tiles
// make of an f32 activation); n a multiple of 8, both 16-byte aligned.
void launch_to_f16(const float* x, int64_t n, uint16_t* y, hipStream_t s);
// The weight types (file types) launch_mat_mul_mma takes at all.
bool mma_matmul_takes(DType type);
int mma_kind(int device);
const char* mma_kind_name(int kind);
// Decode matvec over int8 activations (hip_matvec_q8.hip): x [n_tok, n_in] is quantised once
// (launch_quantize_q8, into q8_act_bytes() of device memory: int8 per value in the layout of
// hip_q8_layout.h, a float scale and sum per 32; rows of a multiple of 256 values), then each
// matvec reading it dots int8 weights with it 4 at a time. Q4_0, Q8_0, Q4_K, Q5_K, Q6_K; n_tok <=
// kMatvecMaxTokens; launch_matvec_q8 returns false, enqueueing nothing, where it does not apply
// (type, shape, weight alignment).
bool q8_matvec_supported(DType type, int64_t n_in, int64_t n_out, int64_t n_tok);
uint64_t q8_act_bytes(int64_t n_in, int64_t n_tok);
void launch_quantize_q8(const float* x, int64_t n_in, int64_t n_tok, void* q8, hipStream_t s);
// The same for any number of rows (the expert FFN's inputs and hidden rows, hip_moe_q8.hip).
void enqueue_quantize_q8(const float* x, int64_t n_in, int64_t rows, void* q8, hipStream_t s);
// An RMSNorm the matvec applies to its own input, where launch_matvec_q8_resid_norm left the
// input: the q8 activations then hold the norm's x * w (not yet divided by rms(x)) and ss the
// sums of squares of x per 32 values [n_tok, n_in / 32]; each output is the dot times
// 1 / sqrt(sum(ss) / n_in + eps), then the bias. n_tok <= kQ8NormMaxTokens.
struct Q8Norm {
    const float* ss = nullptr;
    float eps = 0.0f;
};
inline constexpr int64_t kQ8NormMaxTokens = 2;
bool launch_matvec_q8(DType type, const void* w, int64_t n_in, int64_t n_out, const void* q8,
                      int64_t n_tok, const float* bias, float* out, hipStream_t s,
                      const Q8Norm* norm = nullptr);
// One matrix of launch_matvec_q8_parts: weights [n_out, n_in] of the common type, bias or null.
struct Q8Matrix {
    const void* w;
    int64_t n_out;
    const float* bias;
    float* out;
};
// Up to kQ8MaxParts matrices of one type and row length reading the same q8 activations (q/k/v,
// gate/up) as one launch over all their rows (numbered one after the other); false, enqueueing
// nothing, where launch_matvec_q8 would refuse any of them.
inline constexpr int kQ8MaxParts = 3;
// q/k/v (three parts, or q/k: two) with the rotary embedding of q and k (whole head_dim rotated,
// angles as launch_rope computes them) and the KV stores of k (and v) at rows *n_past.. done by
// the same launch: q's out gets the roped q; k and v go only to the caches (their outs are not
// written).
struct Q8Rope {
    const float2* cs;       // [n_tok, head_dim / 2] (cos, sin) of the positions: launch_rope_table
    const int32_t* n_past;  // device
    void* k_cache;
    void* v_cache;
    bool cache_f16;
    bool neox;
    int64_t head_dim;
};
// Whether launch_matvec_q8_parts takes `rope` for q/k/v of this type and head_dim (rows per
// block must be whole rotation pairs of one head).
bool q8_rope_supported(DType type, int64_t head_dim);
bool launch_matvec_q8_parts(DType type, const Q8Matrix* m, int n, int64_t n_in, const void* q8,
                            int64_t n_tok, hipStream_t s, const Q8Rope* rope = nullptr,
                            const Q8Norm* norm = nullptr);
// The matvec whose output the residual stream adds and the next RMSNorm reads (the output and
// down projections, n_tok <= kQ8NormMaxTokens): sum = resid + W x (+ bias) [n_tok, n_out], and
// for the norm (weights nw, or null) the q8 activations of sum * nw in q8_out and the sums of
// squares of sum per 32 values in ss [n_tok, n_out / 32]: what a matvec with Q8Norm reads in
// place of the norm's output, so the norm needs no launch of its own. A block of 1024 threads
// takes 32 rows (a whole q8 block of the output). n_out a multiple of 256; sum may be resid;
// false, enqueueing nothing, where it does not apply.
bool launch_matvec_q8_resid_norm(DType type, const void* w, int64_t n_in, int64_t n_out,
                                 const void* q8, int64_t n_tok, const float* bias,
                                 const float* resid, float* sum, const float* nw, void* q8_out,
                                 float* ss, hipStream_t s);
// RMSNorm of whole rows (x [rows, cols], rows <= kMatvecMaxTokens, cols a multiple of 32) that
// also leaves the output's q8 activations in q8 (q8_act_bytes(cols, rows)), as
// launch_quantize_q8 would; false, enqueueing nothing, for shapes/alignments it does not take.
bool launch_rms_norm_q8(const float* x, const float* w, int64_t cols, int64_t rows, float eps,
                        float* out, void* q8, hipStream_t s);
// sum = a + b, then RMSNorm of its whole rows into out (one launch: the residual add and the
// next norm), rows of at most 4096 floats (read once, so out may be written over a or b row for
// row); q8 (or null): also the output's q8 activations as launch_rms_norm_q8 leaves them (rows
// <= kMatvecMaxTokens, cols a multiple of 32). False, enqueueing nothing, where it does not apply.
bool launch_add_rms_norm(const float* a, const float* b, float* sum, const float* w, int64_t cols,
                         int64_t rows, float eps, float* out, void* q8, hipStream_t s);
// GatedAct of [rows, cols] (rows <= kMatvecMaxTokens, cols a multiple of 32) that also leaves
// the output's q8 activations in q8, as launch_rms_norm_q8 does.
bool launch_gated_q8(int act, const float* gate, const float* up, int64_t cols, int64_t rows,
                     float* out, void* q8, hipStream_t s);
// The same for any number of rows; the caller has checked the shape and 16-byte alignment.
void enqueue_gated_q8(int act, const float* gate, const float* up, int64_t cols, int64_t rows,
                      float* out, void* q8, hipStream_t s);
// One thread holding the stream until *release (host memory mapped for the device, MappedFlag)
// reaches target, or for max_cycles device clocks at most (the profiler's hold).
void launch_hold(const int* release, int target, long long max_cycles, hipStream_t s);
// Reads `bytes` at p (16-byte aligned, a multiple of 16) with `blocks` blocks, writing one word per
// block to out: the weight-placement probe times it over a range.
void launch_read_probe(const void* p, uint64_t bytes, uint32_t* out, int blocks, hipStream_t s);
// True when the kernels above read weights of this type.
bool weight_type_supported(DType type);

}  // namespace tandem::hip

namespace tandem::hip {

// Rotary embedding of every head of x [n_tokens, width] at positions pos[t] (ggml's normal or
// neox pairing); dims past n_rot are copied. factors: optional [n_rot/2] frequency divisors.
// cache (optional): the output rows also go into a KV cache of the same width at rows
// *n_past.. as launch_kv_store writes them (the K rope and its store in one launch).
void launch_rope(const float* x, const int32_t* pos, int64_t n_tokens, int64_t width,
                 int64_t head_dim, int64_t n_rot, bool neox, float freq_base, float freq_scale,
                 const float* factors, float* out, hipStream_t s, void* cache = nullptr,
                 bool cache_f16 = false, const int32_t* n_past = nullptr);
// The (cos, sin) of every rotated pair at n_tok positions, table [n_tok, n_rot / 2], the angles
// as launch_rope computes them (in double precision), for launches that rope many rows at the
// same positions (launch_matvec_q8_parts: every layer's q/k of a step).
void launch_rope_table(const int32_t* pos, int64_t n_tok, int64_t n_rot, float freq_base,
                       float freq_scale, const float* factors, float2* table, hipStream_t s);
// Per-head RMSNorm, rope and KV stores of a one-token decode step's q, k, v in one launch
// (hip_qk_norm_rope.hip; core's match_qk_norm_rope): q normed and roped into q_out, k normed and
// roped into the K cache, v into the V cache, at row *n_past. Whole heads rotated (table from
// launch_rope_table), head_dim 64 / 128, q, k and v together at most 12288 floats, 16-byte
// aligned tensors (f32 caches too); q_out may share memory with q, k or v (all are read first).
// False, enqueueing nothing, where it does not apply.
struct QkNormRope {
    const float *q, *k, *v;  // [n_tok, n_head * head_dim], [n_tok, n_kv_head * head_dim] x2
    const float *q_w, *k_w;  // the norms' weights [head_dim] or null
    float eps;
    const float2* cs;       // [n_tok, head_dim / 2]
    const int32_t* n_past;  // device
    float* q_out;
    void *k_cache, *v_cache;
    bool cache_f16, neox;
    int64_t head_dim, n_head, n_kv_head, n_tok;
};
bool launch_qk_norm_rope(const QkNormRope& a, hipStream_t s);
// Writes src [n_tokens, width] into cache rows *n_past.. (f16 rounded to nearest even, or f32).
// n_past points at device memory (the step's io buffer): a replayed graph reads the new value;
// the host checks the range before enqueueing.
void launch_kv_store(const float* src, int64_t n_tokens, int64_t width, bool f16, void* cache,
                     const int32_t* n_past, hipStream_t s);
// Causal attention of q [n_tokens, n_head*head_dim] at positions *n_past.. over cache rows
// 0..*n_past+n_tokens-1 (GQA, window 0 = none, softcap 0 = none); n_past as for kv_store.
// scratch: attention_scratch_floats() floats of device memory for decode steps, whose keys are
// split over several blocks (null or too small: one block per token and head); its first
// attention_zeroed_floats() must be zero when first given, and stay untouched by anything else
// (ticket counters, left zero by every launch). q8 (or null):
// where the output's q8 activations go (q8_act_bytes(n_head * head_dim, n_tokens)), written
// when the split path runs and head_dim % 32 == 0 (returned). mma: prefill and decode steps over
// an f16 cache with head_dim 64 / 128 may run on the matrix units (hip_attention_mma.h,
// hip_attention_split_mma.h: q and the softmax weights rounded to f16); the backend sets it
// where the kernels passed their check.
bool launch_attention(const float* q, int64_t n_tokens, const int32_t* n_past, int64_t n_head,
                      int64_t n_kv_head, int64_t head_dim, int64_t window, float scale,
                      float softcap, const void* k_cache, const void* v_cache, bool f16,
                      float* scratch, uint64_t scratch_floats, float* out, hipStream_t s,
                      void* q8 = nullptr, bool mma = false);
uint64_t attention_scratch_floats(int64_t n_tokens, int64_t n_head, int64_t head_dim);
// Whether decode steps may take the matrix units where launch_attention's mma allows
// (TANDEM_HIP_SPLIT_MMA=0: no; read at every call).
bool attention_split_mma_enabled();
uint64_t attention_zeroed_floats();
// Largest head_dim launch_attention takes.
int64_t attention_max_head_dim();

}  // namespace tandem::hip

namespace tandem::hip {

// Softmax gating and top-k per token: logits [n_tok, n_expert] -> route [n_tok, 2k] of
// (expert id, weight) pairs; ties go to the lower id; weights renormalised over the k when
// `normalize`.
void launch_moe_route(const float* logits, int64_t n_tok, int64_t n_expert, int k, bool normalize,
                      float* route, hipStream_t s);
// Largest k launch_moe_route takes.
int moe_max_top_k();

// The expert FFN over the experts held here: out[t] = sum_j w_j down_e(act(gate_e x) * up_e x).
struct MoeFfnArgs {
    const float* x = nullptr;      // [n_tok, n_embd]
    const float* route = nullptr;  // [n_tok, 2k]
    const void* gate = nullptr;    // [n_local, n_ff, n_embd] of gate_type
    const void* up = nullptr;      // [n_local, n_ff, n_embd] of up_type
    const void* down = nullptr;    // [n_local, n_embd, n_ff] of down_type
    DType gate_type = DType::F32, up_type = DType::F32, down_type = DType::F32;
    int64_t n_tok = 0, n_embd = 0, n_ff = 0, n_local = 0;
    int k = 0, first_expert = 0, act = 0;
    float* scratch = nullptr;  // moe_ffn_scratch_floats() floats of device memory
    uint64_t scratch_floats = 0;
    float* out = nullptr;  // [n_tok, n_embd]
    bool q8 = true;        // the q8 path where it applies (hip_moe_q8.h)
    // Prefill of the q8 path's experts on the matrix units (hip_moe_mma.hip: f16 rounding, as
    // launch_mat_mul's mma), where the backend's check passed.
    bool mma = false;
};
uint64_t moe_ffn_scratch_floats(int64_t n_tok, int k, int64_t n_embd, int64_t n_ff,
                                int64_t n_local);
void launch_moe_ffn(const MoeFfnArgs& args, hipStream_t s);

}  // namespace tandem::hip
