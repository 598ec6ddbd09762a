#pragma once
// Bounds-checked big-endian encoding shared by every wire message (beacons, pairing, channel
// handshakes). A reader never reads past its span: each short field throws a tandem::Error that
// names the message, the field and the offset, so a hostile packet ends as one log line.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/common/error.h"

namespace tandem::net {

using Key32 = std::array<uint8_t, 32>;

class WireWriter {
  public:
    void u8(uint8_t v) { buf_.push_back(v); }
    void u16(uint16_t v) { put_be(v, 2); }
    void u32(uint32_t v) { put_be(v, 4); }
    void u64(uint64_t v) { put_be(v, 8); }
    void bytes(std::span<const uint8_t> b) { buf_.insert(buf_.end(), b.begin(), b.end()); }
    // A string of at most 255 bytes, prefixed by its length.
    void str8(std::string_view s, const char* field) {
        if (s.size() > 255)
            throw Error(std::string("wire: field '") + field + "' longer than 255 bytes");
        u8(uint8_t(s.size()));
        buf_.insert(buf_.end(), s.begin(), s.end());
    }
    const std::vector<uint8_t>& data() const { return buf_; }
    std::vector<uint8_t> take() { return std::move(buf_); }
    size_t size() const { return buf_.size(); }

  private:
    void put_be(uint64_t v, int n) {
        for (int i = n - 1; i >= 0; --i) buf_.push_back(uint8_t(v >> (8 * i)));
    }
    std::vector<uint8_t> buf_;
};

class WireReader {
  public:
    // `what` names the message in errors ("beacon", "pairing reply").
    WireReader(std::span<const uint8_t> data, std::string what)
        : data_(data), what_(std::move(what)) {}

    uint8_t u8(const char* field) { return uint8_t(get_be(1, field)); }
    uint16_t u16(const char* field) { return uint16_t(get_be(2, field)); }
    uint32_t u32(const char* field) { return uint32_t(get_be(4, field)); }
    uint64_t u64(const char* field) { return get_be(8, field); }
    std::span<const uint8_t> take(size_t n, const char* field) {
        need(n, field);
        auto s = data_.subspan(pos_, n);
        pos_ += n;
        return s;
    }
    template <size_t N>
    std::array<uint8_t, N> fixed(const char* field) {
        std::array<uint8_t, N> a{};
        auto s = take(N, field);
        std::copy(s.begin(), s.end(), a.begin());
        return a;
    }
    std::string str8(const char* field, size_t max_len = 255) {
        size_t n = u8(field);
        if (n > max_len)
            fail(field, "length " + std::to_string(n) + " exceeds " + std::to_string(max_len));
        auto s = take(n, field);
        return std::string(s.begin(), s.end());
    }
    size_t offset() const { return pos_; }
    size_t remaining() const { return data_.size() - pos_; }
    void expect_end() {
        if (remaining() != 0)
            throw Error(what_ + ": " + std::to_string(remaining()) +
                        " unexpected trailing bytes at offset " + std::to_string(pos_));
    }
    [[noreturn]] void fail(const char* field, const std::string& why) const {
        throw Error(what_ + ": field '" + field + "' at offset " + std::to_string(pos_) + ": " +
                    why);
    }

  private:
    void need(size_t n, const char* field) const {
        if (n > remaining())
            fail(field, "truncated (need " + std::to_string(n) + " bytes, " +
                            std::to_string(remaining()) + " left)");
    }
    uint64_t get_be(int n, const char* field) {
        need(size_t(n), field);
        uint64_t v = 0;
        for (int i = 0; i < n; ++i) v = (v << 8) | data_[pos_ + i];
        pos_ += size_t(n);
        return v;
    }
    std::span<const uint8_t> data_;
    std::string what_;
    size_t pos_ = 0;
};

}  // namespace tandem::net
