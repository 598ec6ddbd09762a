#pragma once
// Writes seed inputs when TANDEM_FUZZ_SEEDS names a folder, so each fuzzer starts from valid
// messages rather than having to guess magic numbers and lengths.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tandem::net::fuzz {

inline void write_seed(const std::string& name, const std::vector<uint8_t>& bytes) {
    const char* dir = std::getenv("TANDEM_FUZZ_SEEDS");
    if (!dir || !*dir) return;
    std::filesystem::create_directories(dir);
    std::ofstream(std::filesystem::path(dir) / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

}  // namespace tandem::net::fuzz
