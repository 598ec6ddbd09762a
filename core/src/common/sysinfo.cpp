#include "tandem/common/sysinfo.h"

#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

namespace tandem {

HostMemory host_memory() {
    HostMemory m;
    std::ifstream f("/proc/meminfo");
    std::string key;
    uint64_t value;
    std::string unit;
    while (f >> key >> value >> unit) {
        if (key == "MemTotal:") m.total = value * 1024;
        if (key == "MemAvailable:") m.available = value * 1024;
    }
    if (m.total == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
        if (pages > 0 && page > 0) m.total = m.available = uint64_t(pages) * uint64_t(page);
    }
    return m;
}

std::string cpu_model_name() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("model name", 0) == 0) {
            auto pos = line.find(':');
            if (pos != std::string::npos) return line.substr(pos + 2);
        }
    }
    return "CPU";
}

int logical_core_count() {
    unsigned n = std::thread::hardware_concurrency();
    return n ? static_cast<int>(n) : 1;
}

int physical_core_count() {
    // Distinct (physical id, core id) pairs; SMT siblings share one.
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    std::set<std::pair<int, int>> cores;
    int phys = 0;
    while (std::getline(f, line)) {
        auto pos = line.find(':');
        if (pos == std::string::npos) continue;
        if (line.rfind("physical id", 0) == 0) phys = std::stoi(line.substr(pos + 1));
        if (line.rfind("core id", 0) == 0) cores.insert({phys, std::stoi(line.substr(pos + 1))});
    }
    int n = static_cast<int>(cores.size());
    return n > 0 ? n : logical_core_count();
}

const CpuFeatures& cpu_features() {
    static const CpuFeatures f = [] {
        CpuFeatures c;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        c.avx2 = __builtin_cpu_supports("avx2");
        c.fma = __builtin_cpu_supports("fma");
        c.avx512f = __builtin_cpu_supports("avx512f");
        c.avx512bw = __builtin_cpu_supports("avx512bw");
        c.avx512vl = __builtin_cpu_supports("avx512vl");
        c.avx512vnni = __builtin_cpu_supports("avx512vnni");
        c.avx512bf16 = __builtin_cpu_supports("avx512bf16");
        // f16c and avxvnni are not named by older __builtin_cpu_supports; read cpuinfo flags.
        std::ifstream info("/proc/cpuinfo");
        std::string line;
        while (std::getline(info, line)) {
            if (line.rfind("flags", 0) == 0) {
                std::istringstream ss(line.substr(line.find(':') + 1));
                std::string flag;
                while (ss >> flag) {
                    if (flag == "f16c") c.f16c = true;
                    if (flag == "avx_vnni") c.avxvnni = true;
                }
                break;
            }
        }
#endif
        return c;
    }();
    return f;
}

std::string cpu_features_string() {
    const auto& f = cpu_features();
    std::string s;
    auto add = [&](bool on, const char* n) {
        if (!on) return;
        if (!s.empty()) s += ' ';
        s += n;
    };
    add(f.avx2, "AVX2");
    add(f.fma, "FMA");
    add(f.f16c, "F16C");
    add(f.avx512f, "AVX512F");
    add(f.avx512bw, "AVX512BW");
    add(f.avx512vl, "AVX512VL");
    add(f.avx512vnni, "AVX512_VNNI");
    add(f.avx512bf16, "AVX512_BF16");
    add(f.avxvnni, "AVX_VNNI");
    return s.empty() ? "scalar" : s;
}

}  // namespace tandem
