#pragma once
// Where a replayed step's time goes on the host (TANDEM_HIP_STEP_TIMES=1): a line on stderr when
// the backend goes away (the end of `tandem-cli bench`) with the mean host microseconds of the
// steps that replayed a captured graph, from compute()'s entry to the launch, in the launch, in
// the wait, and copying the outputs out, beside the GPU's time from the launch to the step's end
// (events) and the host's time between two steps (the engine, the caller). A decode token's GPU
// idles for about the host's parts outside the launch and the wait: session 36 found ~15 us of
// node checks a replayed 8B step there (docs/hip.md). Steps that captured or ran eagerly are left
// out: a capture's milliseconds would swamp the mean.
#include <chrono>
#include <cstdio>

namespace tandem::hip {

class StepTimes {
  public:
    explicit StepTimes(bool on) : on_(on) {}
    StepTimes(const StepTimes&) = delete;
    StepTimes& operator=(const StepTimes&) = delete;
    ~StepTimes() {
        if (on_ && n_ > 0)
            std::fprintf(stderr,
                         "hip step times (%d replayed steps, us a step): between steps %.1f, "
                         "before the launch %.1f, launch %.1f, wait %.1f, outputs copied out "
                         "%.1f; GPU from the launch to the end %.1f\n",
                         n_, sum_[kBetween] / n_, sum_[kBefore] / n_, sum_[kLaunch] / n_,
                         sum_[kWait] / n_, sum_[kCopy] / n_, sum_[kGpu] / n_);
        if (start_) (void)hipEventDestroy(start_);
    }
    bool on() const { return on_; }

    // compute()'s entry; the launch (with an event on the stream); its return; the wait's end.
    void entered() { mark(kEntered); }
    void launching(hipStream_t s) {
        mark(kLaunching);
        // Made here, not in the constructor: the backend's device is current by now.
        if (on_ && !start_ && hipEventCreate(&start_) != hipSuccess) on_ = false;
        if (on_) (void)hipEventRecord(start_, s);
    }
    void launched() { mark(kLaunched); }
    void waited() { mark(kWaited); }
    // The outputs copied: the step's times into the means if it replayed a graph; `done` is the
    // event recorded after its work.
    void finished(bool replayed, hipEvent_t done) {
        if (!on_) return;
        const double now = now_us();
        float ms = 0;
        if (replayed && last_end_ > 0 && hipEventElapsedTime(&ms, start_, done) == hipSuccess) {
            sum_[kBetween] += t_[kEntered] - last_end_;
            sum_[kBefore] += t_[kLaunching] - t_[kEntered];
            sum_[kLaunch] += t_[kLaunched] - t_[kLaunching];
            sum_[kWait] += t_[kWaited] - t_[kLaunched];
            sum_[kCopy] += now - t_[kWaited];
            sum_[kGpu] += 1e3 * double(ms);
            ++n_;
        }
        last_end_ = now;
    }

  private:
    enum Mark { kEntered, kLaunching, kLaunched, kWaited, kMarks };
    enum Sum { kBetween, kBefore, kLaunch, kWait, kCopy, kGpu, kSums };
    static double now_us() {
        return std::chrono::duration<double, std::micro>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }
    void mark(Mark m) {
        if (on_) t_[m] = now_us();
    }
    bool on_;
    hipEvent_t start_ = nullptr;
    double t_[kMarks] = {}, sum_[kSums] = {}, last_end_ = 0;
    int n_ = 0;
};

}  // namespace tandem::hip
