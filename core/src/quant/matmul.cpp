// Activations (quantised once per call) and the row-range matmul on top of the kernel table.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "blocks.h"
#include "kernels.h"
#include "tandem/common/error.h"
#include "tandem/quant/fp16.h"
#include "tandem/quant/quant.h"

namespace tandem::quant {

struct Activations::Buffer {
    void* data = nullptr;
    size_t capacity = 0;
    // q8_0 side data for the GEMM (see block_scales()); empty when not computed.
    std::vector<float> block_d;
    std::vector<int32_t> block_sum;
    ~Buffer() { std::free(data); }
    void* reserve(size_t bytes) {
        if (bytes > capacity) {
            std::free(data);
            capacity = (bytes + 63) / 64 * 64;
            data = std::aligned_alloc(64, capacity);  // 64: whole cache lines for SIMD loads
            if (!data) {
                capacity = 0;
                throw Error("quant: cannot allocate " + std::to_string(bytes) +
                            " bytes for quantised activations");
            }
        }
        return data;
    }
};

Activations::Activations() = default;
Activations::~Activations() = default;
Activations::Activations(Activations&&) noexcept = default;
Activations& Activations::operator=(Activations&&) noexcept = default;

void Activations::prepare(DType weight, const float* x, int64_t n_in, int64_t n_tokens, Isa isa) {
    const DType fmt = act_type(weight);
    const auto& tr = dtype_traits(fmt);
    if (n_in <= 0 || n_tokens < 0 || n_in % tr.block_elems != 0)
        throw Error("quant: activations for " + std::string(dtype_name(weight)) + ": n_in " +
                    std::to_string(n_in) + " must be a positive multiple of " +
                    std::to_string(tr.block_elems) + " (n_tokens " + std::to_string(n_tokens) +
                    ")");
    format_ = fmt;
    n_in_ = n_in;
    n_tokens_ = n_tokens;
    row_stride_ = row_bytes(fmt, static_cast<uint64_t>(n_in));
    if (fmt == DType::F32) {
        data_ = x;
        return;
    }
    if (!buf_) buf_ = std::make_unique<Buffer>();
    auto* out = static_cast<uint8_t*>(buf_->reserve(row_stride_ * static_cast<size_t>(n_tokens)));
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float* src = x + t * n_in;
        void* dst = out + static_cast<size_t>(t) * row_stride_;
        quantize_act_row(fmt, src, dst, n_in, isa);
    }
    data_ = out;
    buf_->block_d.clear();
    buf_->block_sum.clear();
    // One token needs them only for a weight type with a GEMV (not for every decode matmul of
    // the other q8_0-activation types).
    const bool one_token_gemv = n_tokens == 1 && isa == Isa::Avx512 && avx512_gemv(weight);
    if (fmt == DType::Q8_0 && (n_tokens >= 2 || one_token_gemv)) {
        // The GEMM (and the one-token GEMV) multiply unsigned weights (q + offset) and fold
        // -offset * sum(q_act) into each block's sum; scales as f32 save a conversion per
        // (block, token, panel).
        const size_t nb = static_cast<size_t>(n_tokens) * static_cast<size_t>(n_in / QK);
        buf_->block_d.resize(nb);
        buf_->block_sum.resize(nb);
        const auto* blocks = reinterpret_cast<const BlockQ8_0*>(out);
        for (size_t b = 0; b < nb; ++b) {
            buf_->block_d[b] = fp16_to_fp32(blocks[b].d);
            int32_t s = 0;
            for (int8_t q : blocks[b].qs) s += q;
            buf_->block_sum[b] = s;
        }
    }
}

const float* Activations::block_scales() const {
    return buf_ && !buf_->block_d.empty() ? buf_->block_d.data() : nullptr;
}
const int32_t* Activations::block_sums() const {
    return buf_ && !buf_->block_sum.empty() ? buf_->block_sum.data() : nullptr;
}

namespace {
// TANDEM_QUANT_GEMM=0 keeps prefill on the row kernels (for A/B measurements).
bool gemm_enabled() {
    static const bool on = [] {
        const char* env = std::getenv("TANDEM_QUANT_GEMM");
        return !env || std::string(env) != "0";
    }();
    return on;
}
}  // namespace

void matmul(DType wt, const void* w, int64_t n_in, int64_t row_begin, int64_t row_end,
            const Activations& x, float* y, int64_t y_stride, Isa isa) {
    const Kernels& k = kernels(wt, isa);
    if (x.format() != k.act || x.n_in() != n_in)
        throw Error("quant: matmul of " + std::string(dtype_name(wt)) + " with n_in " +
                    std::to_string(n_in) + ": activations were prepared as " +
                    std::string(dtype_name(x.format())) + " with n_in " + std::to_string(x.n_in()));
    if (row_begin < 0 || row_end < row_begin)
        throw Error("quant: matmul: bad row range [" + std::to_string(row_begin) + ", " +
                    std::to_string(row_end) + ")");
    const size_t w_stride = row_bytes(wt, static_cast<uint64_t>(n_in));
    const auto* wb = static_cast<const uint8_t*>(w);
    const int64_t n_tokens = x.n_tokens();
    if (n_tokens >= kGemmMinTokens && isa == Isa::Avx512 && gemm_enabled()) {
        if (const GemmFn gemm = avx512_gemm(wt)) {
            gemm(wb, w_stride, n_in, row_begin, row_end, x, y, y_stride);
            return;
        }
    }
    if (n_tokens == 1 && isa == Isa::Avx512 && x.block_sums()) {
        if (const GemvFn gemv = avx512_gemv(wt)) {
            gemv(wb, w_stride, n_in, row_begin, row_end, x, y);
            return;
        }
    }
    if (n_tokens == 1) {
        for (int64_t r = row_begin; r < row_end; ++r)
            y[r] = k.vec_dot(n_in, wb + static_cast<size_t>(r) * w_stride, x.row(0));
        return;
    }
    // Blocks of rows small enough to stay in L1 (~16 KiB) next to one token tile: each weight
    // row comes from memory once, and each token tile's activations are read from L1 by every
    // row of the block instead of from L2 by every row of the matrix.
    const int64_t rows_per_block = std::max<int64_t>(1, static_cast<int64_t>(16384 / w_stride));
    float out[kMaxTokenTile];
    for (int64_t r0 = row_begin; r0 < row_end; r0 += rows_per_block) {
        const int64_t r1 = std::min(row_end, r0 + rows_per_block);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += kMaxTokenTile) {
            const int nt = static_cast<int>(std::min<int64_t>(kMaxTokenTile, n_tokens - t0));
            for (int64_t r = r0; r < r1; ++r) {
                k.vec_dot_tile(n_in, wb + static_cast<size_t>(r) * w_stride, x.row(t0),
                               x.row_stride(), nt, out);
                for (int j = 0; j < nt; ++j) y[(t0 + j) * y_stride + r] = out[j];
            }
        }
    }
}

void matmul(DType wt, const void* w, int64_t n_in, int64_t row_begin, int64_t row_end,
            const float* x, int64_t n_tokens, float* y, int64_t y_stride, Isa isa) {
    Activations acts;
    acts.prepare(wt, x, n_in, n_tokens, isa);
    matmul(wt, w, n_in, row_begin, row_end, acts, y, y_stride, isa);
}

}  // namespace tandem::quant
