#pragma once
// Weight types: (de)quantisation of rows and the CPU dot-product kernels behind matmul.
//
// Block layouts are ggml's (GGUF data is used as it is). Integer dot products follow llama.cpp's
// scheme: activations are quantised once per matmul into the format the weight type wants
// (q8_0 for the 32-element types, q8_K for the 256-element ones, f32 for F32/F16/BF16; q8_1 for
// the types with a min, Q4_1/Q5_1), and every weight
// row is dotted with those rows. Kernels are picked at run time by CPU features (AVX-512, AVX2,
// scalar); TANDEM_QUANT_ISA=scalar|avx2|avx512 forces a lower level (tests, benchmarks).
//
// Threading: the caller splits output rows; Activations are prepared once and shared read-only.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "tandem/common/dtype.h"

namespace tandem::quant {

// Kernel levels (see default_isa() below).
enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2 };

// ---- Rows -------------------------------------------------------------------------------------
// n is the element count of the row; it must be a multiple of the type's block size. Unsupported
// types and bad n throw tandem::Error naming the type.
// Dequantise: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K IQ4_NL
// IQ4_XS.
bool can_dequantize(DType t);
// Quantise: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K Q5_K Q6_K.
bool can_quantize(DType t);
// src holds row_bytes(t, n) bytes.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// Reference quantisers, bit for bit those of ggml (and of the gguf Python package where it has
// one). dst receives row_bytes(t, n) bytes.
void quantize_row(DType t, const float* src, void* dst, int64_t n);

// acc[i] += w * row[i] for a row of type t (any dequantisable type; F32 and F16 directly with
// SIMD, the others through an L1-sized dequantised chunk). For attention's weighted sum of V rows.
void add_scaled_row(DType t, const void* src, float w, float* acc, int64_t n);

// out[k * n + i] = sum_j w[k * w_stride + j] * row_j[i] for k < n_acc and j < n_rows, where
// row_j (n elements of type t) is at rows + j * row_stride: attention's weighted sum of V rows,
// done for all the query heads that share them (GQA) in one pass over the rows. Any dequantisable
// type; F32 and F16 directly with SIMD.
void weighted_rows_sum(DType t, const void* rows, size_t row_stride, int64_t n_rows, const float* w,
                       int64_t w_stride, int n_acc, float* out, int64_t n);

// x[j] = exp(x[j] - shift) for j < n; returns their sum (softmax's numerator and denominator).
// AVX-512: a polynomial exp within 2 ulp of std::exp (and 0 where that underflows), the sum in
// float lanes; otherwise std::exp and a double sum.
float exp_shifted_sum(float* x, int64_t n, float shift);

// ---- Activation formats -----------------------------------------------------------------------
// The activation format a weight type's dot product consumes: DType::F32, Q8_0, Q8_1 or Q8_K.
DType act_type(DType weight);
// q8_0: 32 per block, f16 scale d = amax/127, q = round(x/d).
void quantize_row_q8_0(const float* x, void* dst, int64_t n);
// q8_1: as q8_0 plus f16 s = d * sum(q) (for the types with a min: Q4_1, Q5_1).
void quantize_row_q8_1(const float* x, void* dst, int64_t n);
// q8_K: 256 per block, f32 d = -max/127 (signed, as ggml), int8 q[256], int16 bsums[16] (sums of
// each 16 q).
void quantize_row_q8_K(const float* x, void* dst, int64_t n);
// Any of the three by format (DType::Q8_0, Q8_1, Q8_K) with the code of a given kernel level;
// every level writes the same bytes (ggml's reference quantisers).
void quantize_act_row(DType format, const float* x, void* dst, int64_t n, Isa isa);

// ---- Kernels ----------------------------------------------------------------------------------
std::string_view isa_name(Isa isa);  // "scalar", "avx2", "avx512"
bool isa_supported(Isa isa);  // by this CPU (AVX2 needs FMA+F16C; AVX-512 needs F/BW/VL/VNNI)
// The best supported level, lowered by TANDEM_QUANT_ISA if set (read once).
Isa default_isa();

// Most activation rows one weight row is dotted with per load (prefill tiles tokens by this).
inline constexpr int kMaxTokenTile = 8;
// Prefill with at least kGemmMinTokens tokens runs a GEMM over panels of kGemmRows weight rows
// where the level has one (AVX-512: Q4_0 Q5_0 Q8_0 IQ4_NL Q4_K Q5_K Q6_K); callers splitting rows
// over threads keep ranges multiples of kGemmRows so no panel is split.
inline constexpr int kGemmRows = 16;
inline constexpr int kGemmMinTokens = 4;

struct Kernels {
    DType type;  // weight type
    DType act;   // act_type(type)
    Isa isa;     // level these functions were compiled for
    // Dot of one weight row (n elements) with one activation row in format `act`.
    float (*vec_dot)(int64_t n, const void* w_row, const void* act_row);
    // out[j] = dot(w_row, act + j * act_stride) for j < n_act (1..kMaxTokenTile): the weight row is
    // unpacked once for all of them.
    void (*vec_dot_tile)(int64_t n, const void* w_row, const void* act, size_t act_stride,
                         int n_act, float* out);
};
// F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS.
bool can_matmul(DType weight);
// The kernels of `weight` at `isa`, or at the best lower level where that one has none; throws
// tandem::Error for an unsupported weight type or an ISA this CPU lacks.
const Kernels& kernels(DType weight, Isa isa);
inline const Kernels& kernels(DType weight) {
    return kernels(weight, default_isa());
}

// Activation rows [n_tokens, n_in] converted once into the format a weight type wants. For f32 it
// only points at the caller's x (which must outlive it). Reusable: prepare() keeps its buffer.
class Activations {
  public:
    Activations();
    ~Activations();
    Activations(Activations&&) noexcept;
    Activations& operator=(Activations&&) noexcept;

    // isa picks the quantiser code (all levels give the same bytes).
    void prepare(DType weight, const float* x, int64_t n_in, int64_t n_tokens,
                 Isa isa = default_isa());

    DType format() const { return format_; }
    int64_t n_in() const { return n_in_; }
    int64_t n_tokens() const { return n_tokens_; }
    size_t row_stride() const { return row_stride_; }  // bytes between token rows
    const void* row(int64_t t) const {
        return static_cast<const uint8_t*>(data_) + static_cast<size_t>(t) * row_stride_;
    }
    // q8_0 with two or more tokens, or one token prepared at the AVX-512 level for a weight type
    // with a GEMV (what the prefill GEMM and the one-token GEMV read; nullptr otherwise): per token
    // t and block b at [t * n_in / 32 + b], the block's scale as f32 and the sum of its 32 q.
    const float* block_scales() const;
    const int32_t* block_sums() const;

  private:
    struct Buffer;
    std::unique_ptr<Buffer> buf_;
    DType format_ = DType::F32;
    int64_t n_in_ = 0, n_tokens_ = 0;
    size_t row_stride_ = 0;
    const void* data_ = nullptr;
};

// y[t * y_stride + r] = dot(row r of w, token t of x) for r in [row_begin, row_end) and every
// token of x. w: [n_out, n_in] in type wt, row r at byte r * row_bytes(wt, n_in). x must have been
// prepared for wt with the same n_in. Rows are walked in L1-sized blocks and tokens in tiles of
// kMaxTokenTile, so each weight row is read from memory once per call.
void matmul(DType wt, const void* w, int64_t n_in, int64_t row_begin, int64_t row_end,
            const Activations& x, float* y, int64_t y_stride, Isa isa = default_isa());
// Convenience for single-threaded callers: prepares the activations itself. x: [n_tokens, n_in].
void matmul(DType wt, const void* w, int64_t n_in, int64_t row_begin, int64_t row_end,
            const float* x, int64_t n_tokens, float* y, int64_t y_stride, Isa isa = default_isa());

}  // namespace tandem::quant
