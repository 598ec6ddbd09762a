#pragma once
// UTF-8 helpers that never fail: an invalid byte counts as one character of its own so that text
// with broken UTF-8 still tokenizes byte for byte.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tandem::tokenizer {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the valid UTF-8 sequence starting at s[pos], or 0 when the bytes there are not one
// (bad lead byte, truncated, overlong, surrogate or above U+10FFFF).
size_t utf8_valid_len(std::string_view s, size_t pos);

// Decodes the character at s[pos]; sets len to its byte length (1 for an invalid byte, whose code
// point is reported as U+FFFD).
uint32_t utf8_decode(std::string_view s, size_t pos, size_t& len);

void utf8_append(std::string& out, uint32_t cp);

}  // namespace tandem::tokenizer
