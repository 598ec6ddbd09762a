#include "security/hex.h"

#include "tandem/common/error.h"

namespace tandem::net {

std::string to_hex(std::span<const uint8_t> bytes) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    s.reserve(bytes.size() * 2);
    for (uint8_t b : bytes) {
        s.push_back(digits[b >> 4]);
        s.push_back(digits[b & 15]);
    }
    return s;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::vector<uint8_t> from_hex(const std::string& text, size_t expected_len,
                              const std::string& field) {
    if (text.size() != expected_len * 2)
        throw Error(field + ": expected " + std::to_string(expected_len * 2) + " hex digits, got " +
                    std::to_string(text.size()));
    std::vector<uint8_t> out(expected_len);
    for (size_t i = 0; i < expected_len; ++i) {
        int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);
        if (hi < 0 || lo < 0) throw Error(field + ": not a hex string");
        out[i] = uint8_t(hi * 16 + lo);
    }
    return out;
}

}  // namespace tandem::net
