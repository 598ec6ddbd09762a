#pragma once
// Whether weights used in place on unified memory (the file mapping's pages registered with HIP,
// or imported into Vulkan) stay there or are copied to device memory, decided by read bandwidths
// measured on this machine. In place is what an APU wants (no load-time copy, no second copy of
// the model), but only while the GPU reads it at device speed, and how the driver maps such pages
// varies: ROCm registers host memory fine-grained, which the amdgpu driver maps uncached in the
// GPU's L2 on RDNA3 / RDNA3.5 (MTYPE_UC); releases that honour hipExtHostRegisterCoarseGrained map
// it cached; RADV imports host pointers as CPU-cached (snooped) memory. The measurement decides,
// not the driver's version. Pure host code: tested in CI without a GPU.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tandem {

struct PlacementProbe {
    double in_place_bytes_per_s = 0;  // a read kernel over registered weight pages; 0: not measured
    double device_bytes_per_s = 0;    // the same kernel over a device allocation of the same size
    uint64_t weight_bytes = 0;        // what copying the in-place weights would allocate
    uint64_t device_free = 0;         // room for the copies: what the device allocator reports
                                      // free (or where they may go instead, see the backends)
};

struct PlacementChoice {
    bool copy = false;
    std::string why;  // one line for the log, with the measured figures
};

// In place is kept while it reads at this fraction of device memory or better: run-to-run noise
// of a short probe is a few percent; an uncached mapping costs far more than that.
constexpr double kInPlaceMinShare = 0.85;
// Left free after a copy, for the KV cache, scratch and the runtime's own allocations that come
// later.
constexpr uint64_t kCopyHeadroom = uint64_t(1) << 30;
// The probe reads up to kProbeMaxBytes of the largest registered range (a few ms on an APU);
// ranges under kProbeMinBytes are not timed, since the GPU's caches (L2, Infinity Cache) would
// answer rather than memory, and weights that small hardly load memory either way.
constexpr uint64_t kProbeMinBytes = uint64_t(64) << 20;
constexpr uint64_t kProbeMaxBytes = uint64_t(256) << 20;

// The share below which in place is copied: kInPlaceMinShare, or TANDEM_PLACEMENT_MIN_SHARE
// (tests force the copy branch on drivers where both read alike, e.g. 10).
inline double in_place_min_share() {
    const char* v = std::getenv("TANDEM_PLACEMENT_MIN_SHARE");
    const double x = v ? std::atof(v) : 0.0;
    return x > 0 ? x : kInPlaceMinShare;
}

inline PlacementChoice choose_weight_placement(const PlacementProbe& p,
                                               double min_share = kInPlaceMinShare) {
    char buf[320];
    const double gib = double(uint64_t(1) << 30);
    if (p.in_place_bytes_per_s <= 0 || p.device_bytes_per_s <= 0)
        return {false, "weights in place (read bandwidth not measured)"};
    const double share = p.in_place_bytes_per_s / p.device_bytes_per_s;
    const int n = std::snprintf(buf, sizeof buf,
                                "weights in place read at %.1f GB/s, device memory at %.1f GB/s "
                                "(%.2f)",
                                p.in_place_bytes_per_s * 1e-9, p.device_bytes_per_s * 1e-9, share);
    std::string why(buf, size_t(n > 0 ? n : 0));
    if (share >= min_share) return {false, why + ": kept in place"};
    if (p.weight_bytes + kCopyHeadroom > p.device_free) {
        std::snprintf(buf, sizeof buf,
                      ": kept in place, copying %.2f GiB does not fit the %.2f GiB the device "
                      "allocator has free",
                      double(p.weight_bytes) / gib, double(p.device_free) / gib);
        return {false, why + buf};
    }
    std::snprintf(buf, sizeof buf, ": copying them (%.2f GiB) to device memory",
                  double(p.weight_bytes) / gib);
    return {true, why + buf};
}

}  // namespace tandem
