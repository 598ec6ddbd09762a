#pragma once
// Hex text for keys in JSON files.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tandem::net {

std::string to_hex(std::span<const uint8_t> bytes);
// Throws tandem::Error naming `field` unless `text` is exactly `expected_len` bytes of hex.
std::vector<uint8_t> from_hex(const std::string& text, size_t expected_len,
                              const std::string& field);

}  // namespace tandem::net
