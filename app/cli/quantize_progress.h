#pragma once
// Progress line of `quantize` / `convert --type q*` on stderr ("[ 12/201] blk.3.ffn_up.weight
// 41% 212 MB/s"), redrawn at most 5 times a second when stderr is a terminal, silent otherwise.
#include <chrono>

#include "tandem/hf/quantize.h"

namespace tandem::cli {

class QuantizeProgressLine {
  public:
    QuantizeProgressLine();
    void operator()(const hf::QuantizeProgress& p);
    // Clears the line; returns the seconds since construction.
    double finish();

  private:
    bool tty_;
    std::chrono::steady_clock::time_point start_, last_;
};

// "Q4_K_M: 201 tensors (113 quantized, 6 by fallback), 1.10 GiB -> 310 MiB, 2.1 s, 540 MB/s",
// then the type mix.
void print_quantize_summary(const hf::QuantizeResult& r, hf::QuantScheme s, double seconds);

}  // namespace tandem::cli
