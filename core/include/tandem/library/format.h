#pragma once
// How the library's numbers are shown to people (CLI and UI alike).
#include <cstdint>
#include <string>

namespace tandem::library {

std::string human_bytes(uint64_t bytes);     // "512 B", "3.4 MiB", "7.62 GiB"
std::string human_count(uint64_t n);         // "950", "12.5K", "1.24B" (parameters, downloads)
std::string human_duration(double seconds);  // "42s", "3m05s", "1h02m"; "?" when negative

}  // namespace tandem::library
