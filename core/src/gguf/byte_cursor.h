#pragma once
// A bounds-checked little-endian reader over bytes in memory. Every read checks the remaining
// size first and throws tandem::Error naming the file and the field being read.
#include <cstdint>
#include <cstring>
#include <string>

#include "tandem/common/error.h"

namespace tandem::gguf::detail {

class ByteCursor {
  public:
    ByteCursor(const uint8_t* data, size_t size, std::string file)
        : data_(data), size_(size), file_(std::move(file)) {}

    size_t pos() const { return pos_; }
    size_t remaining() const { return size_ - pos_; }
    const std::string& file() const { return file_; }

    [[noreturn]] void fail(const std::string& what) const {
        throw Error("gguf: " + file_ + ": " + what);
    }

    template <typename T>
    T read(const char* field) {
        if (remaining() < sizeof(T))
            fail(std::string(field) + ": truncated at offset " + std::to_string(pos_) + " (need " +
                 std::to_string(sizeof(T)) + " bytes, file size " + std::to_string(size_) + ")");
        T v;
        std::memcpy(&v, data_ + pos_,
                    sizeof(T));  // GGUF is little-endian, like every host we run on
        pos_ += sizeof(T);
        return v;
    }

    // A u64 length-prefixed string; the length is capped by what is left in the file so a
    // hostile length never turns into a huge allocation.
    std::string read_string(const char* field) {
        const uint64_t n = read<uint64_t>(field);
        if (n > remaining())
            fail(std::string(field) + ": string length " + std::to_string(n) + " at offset " +
                 std::to_string(pos_ - 8) + " exceeds the " + std::to_string(remaining()) +
                 " bytes left in the file");
        std::string s(reinterpret_cast<const char*>(data_ + pos_), size_t(n));
        pos_ += size_t(n);
        return s;
    }

  private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
    std::string file_;
};

}  // namespace tandem::gguf::detail
