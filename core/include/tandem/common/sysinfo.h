#pragma once
// Facts about the host: memory, CPU model, cores, SIMD features.
#include <cstdint>
#include <string>

namespace tandem {

struct HostMemory {
    uint64_t total = 0;      // MemTotal
    uint64_t available = 0;  // MemAvailable
};

HostMemory host_memory();
std::string cpu_model_name();
int physical_core_count();  // falls back to logical count
int logical_core_count();

struct CpuFeatures {
    bool avx2 = false, fma = false, f16c = false, avx512f = false, avx512bw = false,
         avx512vl = false, avx512vnni = false, avx512bf16 = false, avxvnni = false;
};
const CpuFeatures& cpu_features();
std::string cpu_features_string();  // "AVX2 FMA F16C AVX512F ..."

}  // namespace tandem
