// Row-level entry points: type dispatch and argument checks around the scalar converters.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "act_quant.h"
#include "dequantize.h"
#include "rows_simd.h"
#include "tandem/common/error.h"
#include "tandem/quant/quant.h"

namespace tandem::quant {
namespace {

using DequantFn = void (*)(const void*, float*, int64_t);
using QuantFn = void (*)(const float*, void*, int64_t);

void copy_f32_out(const void* src, float* dst, int64_t n) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void copy_f32_in(const float* src, void* dst, int64_t n) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

bool use_simd() {
    static const bool on = default_isa() != Isa::Scalar;
    return on;
}
bool use_avx512() {
    static const bool on = default_isa() == Isa::Avx512;
    return on;
}

DequantFn dequant_fn(DType t) {
    if (use_simd() && t == DType::F16) return avx2::dequant_f16;
    if (use_simd() && t == DType::BF16) return avx2::dequant_bf16;
    switch (t) {
        case DType::F32:
            return copy_f32_out;
        case DType::F16:
            return scalar::dequant_f16;
        case DType::BF16:
            return scalar::dequant_bf16;
        case DType::Q4_0:
            return scalar::dequant_q4_0;
        case DType::Q4_1:
            return scalar::dequant_q4_1;
        case DType::Q5_0:
            return scalar::dequant_q5_0;
        case DType::Q5_1:
            return scalar::dequant_q5_1;
        case DType::Q8_0:
            return scalar::dequant_q8_0;
        case DType::Q2_K:
            return scalar::dequant_q2_k;
        case DType::Q3_K:
            return scalar::dequant_q3_k;
        case DType::Q4_K:
            return scalar::dequant_q4_k;
        case DType::Q5_K:
            return scalar::dequant_q5_k;
        case DType::Q6_K:
            return scalar::dequant_q6_k;
        case DType::Q8_K:
            return scalar::dequant_q8_k;
        case DType::IQ4_NL:
            return scalar::dequant_iq4_nl;
        case DType::IQ4_XS:
            return scalar::dequant_iq4_xs;
        default:
            return nullptr;
    }
}

QuantFn quant_fn(DType t) {
    if (use_simd() && t == DType::F16) return avx2::quant_f16;
    if (use_simd() && t == DType::BF16) return avx2::quant_bf16;
    switch (t) {
        case DType::F32:
            return copy_f32_in;
        case DType::F16:
            return scalar::quant_f16;
        case DType::BF16:
            return scalar::quant_bf16;
        case DType::Q4_0:
            return scalar::quant_q4_0;
        case DType::Q4_1:
            return scalar::quant_q4_1;
        case DType::Q5_0:
            return scalar::quant_q5_0;
        case DType::Q5_1:
            return scalar::quant_q5_1;
        case DType::Q8_0:
            return scalar::quant_q8_0;
        case DType::Q4_K:
            return scalar::quant_q4_k;
        case DType::Q5_K:
            return scalar::quant_q5_k;
        case DType::Q6_K:
            return scalar::quant_q6_k;
        default:
            return nullptr;
    }
}

std::string type_label(DType t) {
    const auto tr = dtype_traits(static_cast<uint32_t>(t));
    return tr ? std::string(tr->name) : "type id " + std::to_string(static_cast<uint32_t>(t));
}

void check_length(const char* what, DType t, int64_t n) {
    const auto tr = dtype_traits(static_cast<uint32_t>(t));
    if (n < 0 || (tr && n % tr->block_elems != 0))
        throw Error(std::string("quant: ") + what + " of " + type_label(t) + ": row length " +
                    std::to_string(n) + " is not a multiple of the block size " +
                    std::to_string(tr ? tr->block_elems : 1));
}

void avx2_or_scalar_f32(const void* src, float w, float* acc, int64_t n) {
    if (use_simd()) return avx2::add_scaled_f32(src, w, acc, n);
    const auto* s = static_cast<const float*>(src);
    for (int64_t i = 0; i < n; ++i) acc[i] += w * s[i];
}

}  // namespace

bool can_dequantize(DType t) {
    return dequant_fn(t) != nullptr;
}
bool can_quantize(DType t) {
    return quant_fn(t) != nullptr;
}

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
    const DequantFn f = dequant_fn(t);
    if (!f) throw Error("quant: dequantize_row: type " + type_label(t) + " is not supported");
    check_length("dequantize_row", t, n);
    f(src, dst, n);
}

void quantize_row(DType t, const float* src, void* dst, int64_t n) {
    const QuantFn f = quant_fn(t);
    if (!f) throw Error("quant: quantize_row: type " + type_label(t) + " is not supported");
    check_length("quantize_row", t, n);
    f(src, dst, n);
}

void quantize_act_row(DType format, const float* x, void* dst, int64_t n, Isa isa) {
    check_length("activation quantiser", format, n);
    const bool simd = isa != Isa::Scalar && isa_supported(Isa::Avx2);
    switch (format) {
        case DType::Q8_0:
            return (simd ? avx2::quant_q8_0 : scalar::quant_q8_0)(x, dst, n);
        case DType::Q8_1:
            return (simd ? avx2::quant_q8_1 : scalar::quant_q8_1)(x, dst, n);
        case DType::Q8_K:
            return (simd ? avx2::quant_q8_k : scalar::quant_q8_k)(x, dst, n);
        default:
            throw Error("quant: " + type_label(format) + " is not an activation format");
    }
}

void quantize_row_q8_0(const float* x, void* dst, int64_t n) {
    quantize_act_row(DType::Q8_0, x, dst, n, default_isa());
}
void quantize_row_q8_1(const float* x, void* dst, int64_t n) {
    quantize_act_row(DType::Q8_1, x, dst, n, default_isa());
}
void quantize_row_q8_K(const float* x, void* dst, int64_t n) {
    quantize_act_row(DType::Q8_K, x, dst, n, default_isa());
}

void add_scaled_row(DType t, const void* src, float w, float* acc, int64_t n) {
    if (t == DType::F32) return avx2_or_scalar_f32(src, w, acc, n);
    if (t == DType::F16 && use_simd()) return avx2::add_scaled_f16(src, w, acc, n);
    // Other types: through a dequantised copy, in chunks that stay in L1.
    const DequantFn f = dequant_fn(t);
    if (!f) throw Error("quant: add_scaled_row: type " + type_label(t) + " is not supported");
    check_length("add_scaled_row", t, n);
    const int64_t chunk = dtype_traits(t).block_elems == 256 ? 1024 : 256;
    float tmp[1024];
    const size_t chunk_bytes = row_bytes(t, static_cast<uint64_t>(chunk));
    for (int64_t i = 0; i < n; i += chunk) {
        const int64_t m = std::min(chunk, n - i);
        f(static_cast<const uint8_t*>(src) + static_cast<size_t>(i / chunk) * chunk_bytes, tmp, m);
        for (int64_t k = 0; k < m; ++k) acc[i + k] += w * tmp[k];
    }
}

void weighted_rows_sum(DType t, const void* rows, size_t row_stride, int64_t n_rows, const float* w,
                       int64_t w_stride, int n_acc, float* out, int64_t n) {
    if (use_avx512() && n % 16 == 0 && (t == DType::F16 || t == DType::F32))
        return (t == DType::F16 ? avx512::weighted_rows_f16 : avx512::weighted_rows_f32)(
            rows, row_stride, n_rows, w, w_stride, n_acc, out, n);
    if (use_simd() && t == DType::F16)
        return avx2::weighted_rows_f16(rows, row_stride, n_rows, w, w_stride, n_acc, out, n);
    if (use_simd() && t == DType::F32)
        return avx2::weighted_rows_f32(rows, row_stride, n_rows, w, w_stride, n_acc, out, n);
    // Scalar level and the other types: row by row through add_scaled_row.
    std::fill(out, out + static_cast<size_t>(n_acc) * static_cast<size_t>(n), 0.0f);
    const auto* base = static_cast<const uint8_t*>(rows);
    for (int64_t j = 0; j < n_rows; ++j)
        for (int k = 0; k < n_acc; ++k)
            add_scaled_row(t, base + static_cast<size_t>(j) * row_stride, w[k * w_stride + j],
                           out + k * n, n);
}

float exp_shifted_sum(float* x, int64_t n, float shift) {
    if (use_avx512()) return avx512::exp_shifted_sum(x, n, shift);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += (x[j] = std::exp(x[j] - shift));
    return static_cast<float>(sum);
}

DType act_type(DType weight) {
    switch (weight) {
        case DType::F32:
        case DType::F16:
        case DType::BF16:
            return DType::F32;
        case DType::Q4_0:
        case DType::Q5_0:
        case DType::Q8_0:
        case DType::IQ4_NL:
            return DType::Q8_0;
        case DType::Q4_1:
        case DType::Q5_1:
            return DType::Q8_1;
        case DType::Q2_K:
        case DType::Q3_K:
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
        case DType::IQ4_XS:
            return DType::Q8_K;
        default:
            throw Error("quant: act_type: weight type " + type_label(weight) +
                        " has no CPU dot product");
    }
}

}  // namespace tandem::quant
