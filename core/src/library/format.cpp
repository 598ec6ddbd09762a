#include "tandem/library/format.h"

#include <cstdio>

namespace tandem::library {

std::string human_bytes(uint64_t b) {
    char buf[32];
    const double d = double(b);
    if (b < 1024) {
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
    } else if (b < (1ull << 20)) {
        std::snprintf(buf, sizeof buf, "%.1f KiB", d / 1024.0);
    } else if (b < (1ull << 30)) {
        std::snprintf(buf, sizeof buf, "%.1f MiB", d / double(1ull << 20));
    } else {
        std::snprintf(buf, sizeof buf, "%.2f GiB", d / double(1ull << 30));
    }
    return buf;
}

std::string human_count(uint64_t n) {
    char buf[32];
    const double d = double(n);
    if (n < 1000) {
        std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
    } else if (n < 1000000) {
        std::snprintf(buf, sizeof buf, "%.1fK", d / 1e3);
    } else if (n < 1000000000) {
        std::snprintf(buf, sizeof buf, "%.1fM", d / 1e6);
    } else {
        std::snprintf(buf, sizeof buf, "%.2fB", d / 1e9);
    }
    return buf;
}

std::string human_duration(double s) {
    if (s < 0) return "?";
    char buf[32];
    auto t = static_cast<long long>(s + 0.5);
    if (t < 60) {
        std::snprintf(buf, sizeof buf, "%llds", t);
    } else if (t < 3600) {
        std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
    } else {
        std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, (t % 3600) / 60);
    }
    return buf;
}

}  // namespace tandem::library
