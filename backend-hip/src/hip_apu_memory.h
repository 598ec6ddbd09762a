#pragma once
// The memory an APU's HIP device can use, from what the runtime reports and the amdgpu driver's
// numbers. ROCm's hipMemGetInfo on an APU has reported, depending on the release and kernel, only
// the VRAM carve-out (15.5 GiB of a 128 GB Strix Halo with a 16 GiB carve-out), the carve-out
// plus GTT, or a free figure above its own total. This backend keeps weights in host memory
// registered in place (GTT), so the carve-out alone is far too small a budget. Pure host code:
// tested in CI without a GPU.
#include <algorithm>
#include <cstdint>

namespace tandem::hip {

struct ApuMemoryFacts {
    uint64_t runtime_total = 0, runtime_free = 0;  // hipMemGetInfo
    // amdgpu sysfs (mem_info_vram_total / _used, mem_info_gtt_total / _used); 0 where absent.
    uint64_t vram_total = 0, vram_used = 0, gtt_total = 0, gtt_used = 0;
    uint64_t host_available = 0;  // MemAvailable: GTT pages come out of it, the carve-out not
};

struct ApuMemory {
    uint64_t total = 0, free = 0;
};

// Where the driver's numbers exist: the carve-out plus the GTT limit in all, and free the
// carve-out's free part plus what GTT can still map, bounded by the host's available memory (the
// GTT limit is a ceiling, not memory set aside). Else the runtime's figures as they are.
inline ApuMemory apu_memory(const ApuMemoryFacts& f) {
    if (f.gtt_total == 0) return {f.runtime_total, f.runtime_free};  // not amdgpu, or no sysfs
    const uint64_t vram_free = f.vram_total - std::min(f.vram_total, f.vram_used);
    const uint64_t gtt_free = f.gtt_total - std::min(f.gtt_total, f.gtt_used);
    return {f.vram_total + f.gtt_total, vram_free + std::min(gtt_free, f.host_available)};
}

}  // namespace tandem::hip
