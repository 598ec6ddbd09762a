#pragma once
// What a backend reports about one of its devices; the planner and the UI read this.
#include <cstdint>
#include <string>

namespace tandem {

enum class DeviceType { Cpu, DiscreteGpu, IntegratedGpu, VirtualGpu, CpuEmulated };

const char* device_type_name(DeviceType t);  // "cpu", "gpu", "igpu", ...

struct DeviceInfo {
    std::string backend;  // "cpu", "vulkan", "hip"
    int index = 0;        // index within its backend (what --device takes)
    std::string name;     // "AMD Radeon 8060S (RADV GFX1151)", "llvmpipe (LLVM 15.0.7, 256 bits)"
    std::string driver;   // driver name/version, free text
    DeviceType type = DeviceType::Cpu;
    uint64_t memory_total = 0;    // bytes usable for weights/KV/scratch
    uint64_t memory_free = 0;     // bytes free now (budget where the API reports one)
    bool unified_memory = false;  // device memory is host memory (APU, CPU)
    // Prefill matmuls round activations and weights to f16 (tensor cores / cooperative
    // matrices; the accumulation stays f32): errors of ~1e-7 NMSE rather than float rounding.
    bool f16_prefill_matmul = false;
    // Prefill attention rounds q and the softmax weights to f16 the same way (f16 KV cache).
    bool f16_prefill_attention = false;
    // Decode steps' attention does too (HIP's split kernel on the matrix units).
    bool f16_decode_attention = false;
    std::string notes;  // e.g. "ROCm sees only the 512 MiB carve-out; raise ttm.pages_limit"
};

}  // namespace tandem
