// Rows of f32 -> a quantised type on several threads, with the checks llama.cpp makes on the
// result (every stored scale finite) so a row that overflows f16 scales is an error, not a file
// that produces NaNs later.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "tandem/common/error.h"
#include "tandem/hf/quantize.h"
#include "tandem/quant/fp16.h"
#include "tandem/quant/quant.h"

namespace tandem::hf {
namespace {

// Byte offsets of the f16 scale fields inside one block (ggml's block layouts).
std::vector<int> f16_scale_offsets(DType t) {
    switch (t) {
        case DType::Q4_0:
        case DType::Q5_0:
        case DType::Q8_0:
            return {0};
        case DType::Q4_1:
        case DType::Q5_1:
        case DType::Q4_K:
        case DType::Q5_K:
            return {0, 2};
        case DType::Q6_K:
            return {208};
        default:
            return {};
    }
}

bool f16_finite(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return (h & 0x7c00) != 0x7c00;
}

// Empty when the row is fine, else why not.
std::string check_row(DType t, const float* x, const uint8_t* q, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (!std::isfinite(x[i]))
            return "element " + std::to_string(i) + " is " +
                   (std::isnan(x[i]) ? "NaN" : "infinite");
    if (t == DType::F16) {
        for (int64_t i = 0; i < n; ++i)
            if (!f16_finite(q + 2 * i))
                return "element " + std::to_string(i) + " (" + std::to_string(x[i]) +
                       ") does not fit f16";
        return {};
    }
    const auto offsets = f16_scale_offsets(t);
    if (offsets.empty()) return {};
    const auto& tr = dtype_traits(t);
    for (int64_t b = 0; b < n / tr.block_elems; ++b)
        for (int off : offsets)
            if (!f16_finite(q + b * tr.block_bytes + off))
                return "block " + std::to_string(b) + ": values up to " +
                       std::to_string(*std::max_element(
                           x + b * tr.block_elems, x + (b + 1) * tr.block_elems,
                           [](float a, float c) { return std::fabs(a) < std::fabs(c); })) +
                       " overflow the f16 block scale";
    return {};
}

}  // namespace

void quantize_rows(DType t, const float* src, int64_t n_rows, int64_t n_per_row, uint8_t* dst,
                   int threads, const std::string& what) {
    if (!quant::can_quantize(t))
        throw Error("quantize: " + what + ": cannot quantize to " + std::string(dtype_name(t)));
    if (n_per_row % dtype_traits(t).block_elems != 0)
        throw Error("quantize: " + what + ": rows of " + std::to_string(n_per_row) +
                    " elements are not a multiple of the " + std::string(dtype_name(t)) + " block");
    const size_t dst_row = row_bytes(t, uint64_t(n_per_row));
    if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
    // Chunks of at least ~64K elements so small tensors do not pay for threads they cannot use.
    const int64_t rows_per_chunk = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, n_per_row));
    const int64_t n_chunks = (n_rows + rows_per_chunk - 1) / rows_per_chunk;
    const int n_threads = int(std::min<int64_t>(threads, n_chunks));

    std::atomic<int64_t> next{0};
    std::mutex err_mutex;
    int64_t err_row = -1;
    std::string err_text;
    std::exception_ptr err_ex;
    auto work = [&] {
        try {
            for (;;) {
                const int64_t chunk = next.fetch_add(1);
                if (chunk >= n_chunks) return;
                const int64_t r0 = chunk * rows_per_chunk;
                const int64_t r1 = std::min(n_rows, r0 + rows_per_chunk);
                for (int64_t r = r0; r < r1; ++r) {
                    const float* x = src + r * n_per_row;
                    uint8_t* q = dst + size_t(r) * dst_row;
                    quant::quantize_row(t, x, q, n_per_row);
                    std::string why = check_row(t, x, q, n_per_row);
                    if (!why.empty()) {
                        std::lock_guard<std::mutex> lock(err_mutex);
                        if (err_row < 0 || r < err_row) {
                            err_row = r;
                            err_text = std::move(why);
                        }
                        next.store(n_chunks);
                        return;
                    }
                }
            }
        } catch (...) {
            std::lock_guard<std::mutex> lock(err_mutex);
            if (!err_ex) err_ex = std::current_exception();
            next.store(n_chunks);
        }
    };
    if (n_threads <= 1) {
        work();
    } else {
        std::vector<std::thread> pool;
        for (int i = 1; i < n_threads; ++i) pool.emplace_back(work);
        work();
        for (auto& th : pool) th.join();
    }
    if (err_ex) std::rethrow_exception(err_ex);
    if (err_row >= 0)
        throw Error("quantize: " + what + ": row " + std::to_string(err_row) + ": " + err_text +
                    " (cannot be stored as " + std::string(dtype_name(t)) + ")");
}

}  // namespace tandem::hf
