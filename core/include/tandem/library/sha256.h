#pragma once
// SHA-256 (OpenSSL) for verifying downloads against the sha256 that Hugging Face publishes as the
// LFS object id of every large file.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace tandem::library {

class Sha256 {
  public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void update(const void* data, size_t n);
    std::string hex_digest();  // lower-case hex; ends the hash

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Hash of a whole file. `on_bytes` (optional) is told the running byte count and may return false
// to stop early (then tandem::Error "cancelled" is thrown).
std::string sha256_file(const std::filesystem::path& path,
                        const std::function<bool(uint64_t)>& on_bytes = {});

}  // namespace tandem::library
