#include "tokenizer/byte_alphabet.h"

#include "tokenizer/utf8.h"

namespace tandem::tokenizer {

ByteAlphabet::ByteAlphabet() {
    cp_to_byte_.fill(-1);
    const auto printable = [](int b) {
        return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
        const uint32_t cp = printable(b) ? uint32_t(b) : next++;
        utf8_append(byte_to_utf8_[b], cp);
        cp_to_byte_[cp] = int16_t(b);
    }
}

const ByteAlphabet& ByteAlphabet::instance() {
    static const ByteAlphabet alphabet;
    return alphabet;
}

std::string ByteAlphabet::encode(std::string_view text) const {
    std::string out;
    out.reserve(text.size() * 2);
    for (char c : text) out += byte_to_utf8_[uint8_t(c)];
    return out;
}

std::optional<uint8_t> ByteAlphabet::decode(uint32_t cp) const {
    if (cp >= cp_to_byte_.size() || cp_to_byte_[cp] < 0) return std::nullopt;
    return uint8_t(cp_to_byte_[cp]);
}

std::string ByteAlphabet::decode(std::string_view token) const {
    std::string out;
    for (size_t pos = 0; pos < token.size();) {
        size_t len;
        const uint32_t cp = utf8_decode(token, pos, len);
        const auto b = utf8_valid_len(token, pos) ? decode(cp) : std::nullopt;
        if (b)
            out += char(*b);
        else
            out.append(token.substr(pos, len));
        pos += len;
    }
    return out;
}

}  // namespace tandem::tokenizer
