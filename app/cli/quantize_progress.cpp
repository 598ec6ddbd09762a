#include "quantize_progress.h"

#include <unistd.h>

#include <cstdio>

#include "tandem/library/format.h"

namespace tandem::cli {

QuantizeProgressLine::QuantizeProgressLine()
    : tty_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_(start_ - std::chrono::seconds(1)) {}

void QuantizeProgressLine::operator()(const hf::QuantizeProgress& p) {
    if (!tty_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double pct = p.bytes_total ? 100.0 * double(p.bytes_done) / double(p.bytes_total) : 0.0;
    const double rate = secs > 0 ? double(p.bytes_done) / secs / 1e6 : 0.0;
    std::fprintf(stderr, "\r\033[K[%4zu/%4zu] %-40.40s %3.0f%% %6.0f MB/s", p.tensor_index + 1,
                 p.n_tensors, p.tensor.c_str(), pct, rate);
    std::fflush(stderr);
}

double QuantizeProgressLine::finish() {
    if (tty_) std::fprintf(stderr, "\r\033[K");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void print_quantize_summary(const hf::QuantizeResult& r, hf::QuantScheme s, double seconds) {
    std::printf("%s: %zu tensors (%zu quantized, %zu by fallback), %s -> %s, %.1f s, %.0f MB/s\n",
                std::string(hf::quant_scheme_name(s)).c_str(), r.n_tensors, r.n_quantized,
                r.n_fallback, library::human_bytes(r.bytes_in).c_str(),
                library::human_bytes(r.bytes_out).c_str(), seconds,
                seconds > 0 ? double(r.bytes_in) / seconds / 1e6 : 0.0);
    std::printf("types:");
    for (const auto& [t, n] : r.mix) std::printf(" %s %zu", std::string(dtype_name(t)).c_str(), n);
    std::printf("\n");
}

}  // namespace tandem::cli
