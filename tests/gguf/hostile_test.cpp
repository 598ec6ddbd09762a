// Broken and hostile files: every one is a tandem::Error naming what is wrong, never a crash,
// a hang or a huge allocation.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "fixtures.h"
#include "gguf_test_util.h"
#include "tandem/common/error.h"

using namespace tandem;
using namespace tandem::test;

namespace {

// Raw GGUF bytes built by hand, so a test can put any value in any field.
struct Bytes {
    std::vector<uint8_t> b;
    template <typename T>
    Bytes& pod(T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        b.insert(b.end(), p, p + sizeof v);
        return *this;
    }
    Bytes& str(const std::string& s) {
        pod<uint64_t>(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        return pod<uint32_t>(0x46554747)
            .pod<uint32_t>(version)
            .pod<uint64_t>(n_tensors)
            .pod<uint64_t>(n_kv);
    }
    Bytes& zeros(size_t n) {
        b.insert(b.end(), n, 0);
        return *this;
    }
};

std::string parse_error(const std::vector<uint8_t>& b) {
    try {
        gguf::File::parse(b.data(), b.size(), "bad.gguf");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

#define EXPECT_PARSE_ERROR(bytes, needle)                                             \
    do {                                                                              \
        const std::string msg = parse_error((bytes).b);                               \
        EXPECT_NE(msg.find(needle), std::string::npos) << "message: '" << msg << "'"; \
        EXPECT_NE(msg.find("bad.gguf"), std::string::npos) << msg;                    \
    } while (0)

std::vector<uint8_t> sample_file_bytes() {
    auto path = temp_dir("gguf-hostile") / "s.gguf";
    sample_writer(sample_tensors(), 32).write(path);
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST(GgufHostile, EveryTruncationIsAnError) {
    const auto full = sample_file_bytes();
    ASSERT_NO_THROW(gguf::File::parse(full.data(), full.size(), "ok.gguf"));
    // Cutting inside the header, metadata, tensor table or data: every prefix is rejected.
    int n = 0;
    for (size_t len = 0; len < full.size(); len += (len < 2048 ? 1 : 97)) {
        std::vector<uint8_t> cut(full.begin(), full.begin() + long(len));
        EXPECT_THROW(gguf::File::parse(cut.data(), cut.size(), "cut.gguf"), Error)
            << "length " << len;
        ++n;
    }
    EXPECT_GT(n, 2000);
}

TEST(GgufHostile, TruncatedFileOnDiskIsAnError) {
    auto full = sample_file_bytes();
    auto path = temp_dir("gguf-trunc") / "t.gguf";
    for (size_t len : {size_t(0), size_t(3), size_t(23), size_t(100), full.size() - 1}) {
        std::ofstream(path, std::ios::binary | std::ios::trunc)
            .write(reinterpret_cast<const char*>(full.data()), long(len));
        EXPECT_THROW(gguf::File::open(path), Error) << len;
    }
    EXPECT_THROW(gguf::File::open(path.parent_path() / "absent.gguf"), Error);
}

TEST(GgufHostile, FlippedBytesNeverCrash) {
    const auto full = sample_file_bytes();
    // Only the header and tables matter to the parser; flip bytes there (the data section is
    // opaque). Each variant parses or throws tandem::Error; anything else fails the test.
    auto f = gguf::File::parse(full.data(), full.size(), "ok.gguf");
    const size_t head = size_t(f.data_offset());
    uint32_t x = 12345;
    int errors = 0;
    for (int i = 0; i < 20000; ++i) {
        auto v = full;
        for (int k = 0; k < 1 + i % 3; ++k) {
            x = x * 1664525u + 1013904223u;
            v[(x >> 8) % head] ^= uint8_t(1u << (x % 8));
        }
        try {
            gguf::File::parse(v.data(), v.size(), "flip.gguf");
        } catch (const Error&) {
            ++errors;
        }
    }
    EXPECT_GT(errors, 1000);
}

TEST(GgufHostile, HugeCountsAndLengthsAreRejectedBeforeAllocating) {
    EXPECT_PARSE_ERROR(Bytes().header(0, 1ull << 60), "kv_count");
    EXPECT_PARSE_ERROR(Bytes().header(1ull << 60, 0), "tensor_count");
    EXPECT_PARSE_ERROR(Bytes().header(0, 1).pod<uint64_t>(1ull << 62).zeros(64), "string length");
    EXPECT_PARSE_ERROR(Bytes().header(0, 1).str("k").pod<uint32_t>(8).pod<uint64_t>(~0ull),
                       "string length");
    EXPECT_PARSE_ERROR(Bytes()
                           .header(0, 1)
                           .str("tokens")
                           .pod<uint32_t>(9)
                           .pod<uint32_t>(8)
                           .pod<uint64_t>(1ull << 40)
                           .zeros(64),
                       "'tokens': array count");
    EXPECT_PARSE_ERROR(
        Bytes().header(0, 1).str("ids").pod<uint32_t>(9).pod<uint32_t>(6).pod<uint64_t>(17).zeros(
            64),
        "'ids': array count 17");
    // Arrays of arrays nested past any sane depth.
    Bytes deep;
    deep.header(0, 1).str("deep").pod<uint32_t>(9);
    for (int i = 0; i < 100; ++i) deep.pod<uint32_t>(9).pod<uint64_t>(1);
    deep.pod<uint32_t>(0).pod<uint64_t>(1).zeros(8);
    EXPECT_PARSE_ERROR(deep, "nested deeper");
}

TEST(GgufHostile, BadHeaderFields) {
    EXPECT_PARSE_ERROR(Bytes().pod<uint32_t>(0x46554746).pod<uint32_t>(3).zeros(16), "bad magic");
    EXPECT_PARSE_ERROR(Bytes().header(0, 0, 1), "version 1");
    EXPECT_PARSE_ERROR(Bytes().header(0, 0, 4), "version 4");
    EXPECT_PARSE_ERROR(Bytes().header(0, 0, 0x03000000), "big-endian");
    EXPECT_PARSE_ERROR(Bytes().pod<uint32_t>(0x46554747), "version: truncated");
    EXPECT_PARSE_ERROR(Bytes().header(0, 1).str("k").pod<uint32_t>(13).zeros(8),
                       "'k': unknown value type 13");
    EXPECT_PARSE_ERROR(Bytes().header(0, 1).str("k").pod<uint32_t>(9).pod<uint32_t>(99).zeros(8),
                       "unknown array element type 99");
    EXPECT_PARSE_ERROR(Bytes().header(0, 1).str("b").pod<uint32_t>(7).pod<uint8_t>(2),
                       "'b': bool value 2");
    EXPECT_PARSE_ERROR(Bytes()
                           .header(0, 2)
                           .str("k")
                           .pod<uint32_t>(4)
                           .pod<uint32_t>(1)
                           .str("k")
                           .pod<uint32_t>(4)
                           .pod<uint32_t>(1),
                       "duplicate metadata key 'k'");
    EXPECT_PARSE_ERROR(Bytes().header(0, 1).str("").pod<uint32_t>(4).pod<uint32_t>(1), "empty key");
    EXPECT_PARSE_ERROR(
        Bytes().header(0, 1).str("general.alignment").pod<uint32_t>(4).pod<uint32_t>(24),
        "general.alignment 24 is not a power of two");
    EXPECT_PARSE_ERROR(
        Bytes().header(0, 1).str("general.alignment").pod<uint32_t>(4).pod<uint32_t>(0),
        "general.alignment 0");
    EXPECT_PARSE_ERROR(
        Bytes().header(0, 1).str("general.alignment").pod<uint32_t>(10).pod<uint64_t>(32),
        "general.alignment is u64");
}

namespace {
// One tensor entry after an empty metadata section, data section padded to 32.
Bytes one_tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type,
                 uint64_t offset, size_t data_bytes) {
    Bytes b;
    b.header(1, 0).str(name).pod<uint32_t>(uint32_t(dims.size()));
    for (auto d : dims) b.pod<uint64_t>(d);
    b.pod<uint32_t>(type).pod<uint64_t>(offset);
    b.zeros((32 - b.b.size() % 32) % 32 + data_bytes);
    return b;
}
}  // namespace

TEST(GgufHostile, BadTensorEntries) {
    // A valid baseline: 8 f32 in 32 bytes.
    EXPECT_EQ(parse_error(one_tensor("w", {8}, 0, 0, 32).b), "");
    EXPECT_PARSE_ERROR(one_tensor("w", {8}, 0, 0, 31), "tensor 0 'w': data [0, 0+32) past end");
    EXPECT_PARSE_ERROR(one_tensor("w", {8}, 0, 32, 32), "past end");
    EXPECT_PARSE_ERROR(one_tensor("w", {8}, 0, 16, 64), "not a multiple of the alignment 32");
    EXPECT_PARSE_ERROR(one_tensor("w", {8}, 0, ~0ull << 5, 64), "past end");
    EXPECT_PARSE_ERROR(one_tensor("w", {1, 1, 1, 1, 1}, 0, 0, 64), "5 dimensions");
    EXPECT_PARSE_ERROR(one_tensor("w", {8, 0}, 0, 0, 64), "dimension 1 is 0");
    EXPECT_PARSE_ERROR(one_tensor("w", {8}, 5, 0, 64), "unknown tensor type 5");
    EXPECT_PARSE_ERROR(one_tensor("w", {8}, 1000, 0, 64), "unknown tensor type 1000");
    EXPECT_PARSE_ERROR(one_tensor("q", {48}, 8, 0, 64),
                       "'q': row of 48 elements is not a multiple of the q8_0 block size 32");
    EXPECT_PARSE_ERROR(one_tensor("w", {1ull << 32, 1ull << 32}, 0, 0, 64),
                       "element count overflows");
    EXPECT_PARSE_ERROR(one_tensor("w", {1ull << 31, 1ull << 31}, 0, 0, 64), "byte size overflows");
    EXPECT_PARSE_ERROR(one_tensor("", {8}, 0, 0, 64), "empty name");

    Bytes dup;
    dup.header(2, 0);
    for (int i = 0; i < 2; ++i)
        dup.str("w").pod<uint32_t>(1).pod<uint64_t>(8).pod<uint32_t>(0).pod<uint64_t>(0);
    dup.zeros(128);
    EXPECT_PARSE_ERROR(dup, "duplicate tensor name 'w'");
}
