// The repacked weight layouts (tandem/backend/weight_repack.h) both GPU backends upload on
// discrete GPUs: each repacked row is read back to file blocks by the layout as documented
// (written again here, not with the library's code) and must be the file row byte for byte;
// which weights qualify, and that others are refused with an error. No backend needed (the
// kernels reading the layout are tested per backend: vk_speed_paths_test, hip_speed_paths_test).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "op_harness.h"
#include "tandem/backend/weight_repack.h"
#include "tandem/common/error.h"

namespace tandem::test {
namespace {

// A repacked row back in the file layout: Q4_0 / Q8_0 groups of 8 blocks are
// [8 f16 scales][8 x quants]; Q6_K groups of 8 super-blocks are [8 x 208-byte bodies][8 f16 d].
std::vector<uint8_t> unpack_row(DType t, const uint8_t* in, size_t rb) {
    std::vector<uint8_t> out(rb);
    if (t == DType::Q6_K) {
        for (size_t g = 0; g < rb / 1680; ++g)
            for (size_t b = 0; b < 8; ++b) {
                uint8_t* blk = out.data() + g * 1680 + b * 210;
                std::memcpy(blk, in + g * 1680 + b * 208, 208);
                std::memcpy(blk + 208, in + g * 1680 + 8 * 208 + 2 * b, 2);
            }
        return out;
    }
    const size_t quant = t == DType::Q4_0 ? 16 : 32, group = 8 * (2 + quant);
    for (size_t g = 0; g < rb / group; ++g)
        for (size_t b = 0; b < 8; ++b) {
            uint8_t* blk = out.data() + g * group + b * (2 + quant);
            std::memcpy(blk, in + g * group + 2 * b, 2);
            std::memcpy(blk + 2, in + g * group + 16 + b * quant, quant);
        }
    return out;
}

TEST(WeightRepack, RowsReadBackAsTheFileBlocks) {
    // (type, row length, rows): one group, several, an 8B model's row lengths.
    const struct {
        DType t;
        int64_t n_in, rows;
    } cases[] = {{DType::Q4_0, 256, 3},   {DType::Q4_0, 4096, 5}, {DType::Q8_0, 256, 2},
                 {DType::Q8_0, 14336, 3}, {DType::Q6_K, 2048, 4}, {DType::Q6_K, 4096, 2}};
    for (const auto& c : cases) {
        const QuantWeight w(c.t, {c.n_in, c.rows, 1}, uint32_t(c.n_in + c.rows));
        const WeightDesc d = w.desc("w");
        ASSERT_TRUE(repackable(d)) << dtype_name(c.t) << " " << c.n_in;
        const size_t rb = row_bytes(c.t, uint64_t(c.n_in));
        // The whole weight, then rows 1.. on their own (a piece of an upload).
        std::vector<uint8_t> all(w.bytes.size()), tail((size_t(c.rows) - 1) * rb);
        repack_rows(d, 0, uint64_t(c.rows), all.data());
        repack_rows(d, 1, uint64_t(c.rows - 1), tail.data());
        EXPECT_NE(all, w.bytes) << dtype_name(c.t) << ": the layout must differ";
        for (int64_t r = 0; r < c.rows; ++r) {
            const auto back = unpack_row(c.t, all.data() + size_t(r) * rb, rb);
            EXPECT_EQ(0, std::memcmp(back.data(), w.bytes.data() + size_t(r) * rb, rb))
                << dtype_name(c.t) << " " << c.n_in << " row " << r;
        }
        EXPECT_EQ(0, std::memcmp(tail.data(), all.data() + rb, tail.size())) << dtype_name(c.t);
    }
}

TEST(WeightRepack, OnlyWholeGroupsOfTheTypesWithALayout) {
    auto desc = [](DType t, int64_t n_in) {
        return WeightDesc{"w", t, {n_in, 2, 1}, nullptr, row_bytes(t, uint64_t(n_in)) * 2};
    };
    EXPECT_TRUE(repackable(desc(DType::Q4_0, 512)));
    EXPECT_FALSE(repackable(desc(DType::Q4_0, 96)));    // 3 blocks
    EXPECT_FALSE(repackable(desc(DType::Q8_0, 2080)));  // 65 blocks
    EXPECT_TRUE(repackable(desc(DType::Q6_K, 2048)));
    EXPECT_FALSE(repackable(desc(DType::Q6_K, 2304)));  // 9 super-blocks
    EXPECT_FALSE(repackable(desc(DType::Q4_K, 4096)));
    EXPECT_FALSE(repackable(desc(DType::F16, 4096)));
    const QuantWeight odd(DType::Q4_0, {96, 2, 1}, 7);
    std::vector<uint8_t> out(odd.bytes.size());
    try {
        repack_rows(odd.desc("odd"), 0, 2, out.data());
        ADD_FAILURE() << "a weight without a repacked layout was repacked";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'odd'"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace tandem::test
