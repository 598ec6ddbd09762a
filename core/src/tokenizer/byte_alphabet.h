#pragma once
// GPT-2's byte-to-unicode alphabet: byte-level BPE vocabularies spell every byte as one printable
// character (printable Latin-1 bytes as themselves, the others as U+0100 + n), so "Ġ" is a space.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tandem::tokenizer {

class ByteAlphabet {
  public:
    static const ByteAlphabet& instance();
    // The UTF-8 spelling of byte b.
    const std::string& encode(uint8_t b) const { return byte_to_utf8_[b]; }
    // Every byte of text spelled in the alphabet.
    std::string encode(std::string_view text) const;
    // The byte a code point stands for, or nullopt when it is not in the alphabet.
    std::optional<uint8_t> decode(uint32_t cp) const;
    // A whole token back to bytes; characters outside the alphabet are kept as their UTF-8.
    std::string decode(std::string_view token) const;

  private:
    ByteAlphabet();
    std::array<std::string, 256> byte_to_utf8_;
    std::array<int16_t, 512> cp_to_byte_;  // the alphabet lies below U+0200
};

}  // namespace tandem::tokenizer
