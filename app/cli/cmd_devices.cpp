// tandem-cli devices: the backends this installation has and the devices each one sees.
#include <cstdio>

#include "command.h"
#include "tandem/backend/registry.h"

namespace {

std::string gib(uint64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", double(b) / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

tandem::cli::Register reg("devices", "List backends and devices", [](CLI::App&) {
    return []() -> int {
        for (const auto& b : tandem::BackendRegistry::instance().backends()) {
            if (!b.available) {
                std::printf("%-7s unavailable: %s\n", b.name.c_str(), b.reason.c_str());
                continue;
            }
            for (const auto& d : b.devices) {
                std::printf("%-7s %d  %-5s %s  [%s]  %s total, %s free%s\n", b.name.c_str(), d.index,
                            tandem::device_type_name(d.type), d.name.c_str(), d.driver.c_str(),
                            gib(d.memory_total).c_str(), gib(d.memory_free).c_str(),
                            d.unified_memory ? ", unified memory" : "");
                if (!d.notes.empty()) std::printf("          note: %s\n", d.notes.c_str());
            }
        }
        return 0;
    };
});

}  // namespace
