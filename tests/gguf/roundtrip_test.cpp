// Writer -> reader: every metadata type, nested arrays, several tensor types and alignments come
// back identically, with data where the offsets say.
#include <gtest/gtest.h>

#include <cstring>

#include "fixtures.h"
#include "gguf_test_util.h"
#include "tandem/common/error.h"

using namespace tandem;
using namespace tandem::test;

class RoundTrip : public ::testing::TestWithParam<uint64_t> {};

TEST_P(RoundTrip, MetadataAndTensorsComeBackIdentically) {
    const uint64_t alignment = GetParam();
    auto tensors = sample_tensors();
    auto path = temp_dir("gguf-rt") / "sample.gguf";
    sample_writer(tensors, alignment).write(path);
    EXPECT_FALSE(std::filesystem::exists(path.string() + ".tmp"));

    auto f = gguf::File::open(path);
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), alignment);
    EXPECT_EQ(f.data_offset() % alignment, 0u);

    auto expected = sample_metadata();
    if (alignment != 32)
        expected.emplace_back("general.alignment", gguf::Value::u32(uint32_t(alignment)));
    ASSERT_EQ(f.metadata().size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(f.metadata()[i].first, expected[i].first);
        EXPECT_TRUE(f.metadata()[i].second == expected[i].second) << expected[i].first;
    }

    ASSERT_EQ(f.tensors().size(), tensors.size());
    for (const auto& t : tensors) {
        const auto* info = f.tensor(t.name);
        ASSERT_NE(info, nullptr) << t.name;
        EXPECT_EQ(info->type, t.type);
        EXPECT_EQ(info->shape, t.shape);
        EXPECT_EQ(info->nbytes, t.data.size());
        EXPECT_EQ(info->offset % alignment, 0u);
        EXPECT_EQ(std::memcmp(f.tensor_data(*info), t.data.data(), t.data.size()), 0) << t.name;
        // The partial mapping a shard uses sees the same bytes.
        auto r = f.map_range(info->offset, info->nbytes);
        EXPECT_EQ(std::memcmp(r.data(), t.data.data(), t.data.size()), 0) << t.name;
    }
    EXPECT_EQ(f.tensor("missing"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Alignments, RoundTrip, ::testing::Values(32, 64, 1, 4096));

TEST(GgufReader, TypedGettersNameTheKey) {
    auto tensors = sample_tensors();
    auto path = temp_dir("gguf-get") / "sample.gguf";
    sample_writer(tensors, 32).write(path);
    auto f = gguf::File::open(path);
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    EXPECT_EQ(f.get_u64("test.u32"), 4000000000u);
    EXPECT_EQ(f.get_u64("test.u64"), 18000000000000000000ull);
    EXPECT_FLOAT_EQ(float(f.get_f64("test.f32")), 0.1f);
    EXPECT_EQ(f.get_u64("absent", 7), 7u);
    EXPECT_EQ(f.get_string("absent", "x"), "x");
    EXPECT_TRUE(f.get_bool("test.bool_true", false));
    EXPECT_EQ(f.find("test.array_string")->as_array().items[2].as_string(), "<|endoftext|>");
    try {
        f.get_u64("test.string");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("test.string"), std::string::npos) << e.what();
    }
    try {
        f.get_string("nope");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'nope' missing"), std::string::npos) << e.what();
    }
    EXPECT_THROW(f.get_u64("test.i8"), Error);      // negative
    EXPECT_THROW(f.get_u64("test.f32", 1), Error);  // present with the wrong type
    EXPECT_THROW(f.map_range(0, f.file_size()), Error);
}

TEST(GgufReader, UnmappedFileRefusesTensorDataButMapsRanges) {
    auto tensors = sample_tensors();
    auto path = temp_dir("gguf-nomap") / "sample.gguf";
    sample_writer(tensors, 32).write(path);
    auto f = gguf::File::open(path, {.map_all = false});
    const auto* t = f.tensor("positions");
    ASSERT_NE(t, nullptr);
    EXPECT_THROW(f.tensor_data(*t), Error);
    auto r = f.map_range(t->offset, t->nbytes);
    EXPECT_EQ(std::memcmp(r.data(), tensors[5].data.data(), t->nbytes), 0);
}

TEST(GgufWriter, SetReplacesInPlaceAndRejectsBadTensors) {
    gguf::Writer w;
    w.set("a", gguf::Value::u32(1));
    w.set("b", gguf::Value::u32(2));
    w.set("a", gguf::Value::string("x"));
    EXPECT_THROW(w.set("", gguf::Value::u32(1)), Error);  // the reader rejects empty keys
    std::vector<float> d(32);
    EXPECT_THROW(w.add_tensor("q", DType::Q8_0, {33}, d.data()), Error);  // not whole blocks
    EXPECT_THROW(w.add_tensor("z", DType::F32, {0}, d.data()), Error);
    EXPECT_THROW(w.add_tensor("five", DType::F32, {1, 1, 1, 1, 1}, d.data()), Error);
    w.add_tensor("t", DType::F32, {32}, d.data());
    EXPECT_THROW(w.add_tensor("t", DType::F32, {32}, d.data()), Error);
    auto path = temp_dir("gguf-set") / "s.gguf";
    w.write(path);
    auto f = gguf::File::open(path);
    ASSERT_EQ(f.metadata().size(), 2u);
    EXPECT_EQ(f.metadata()[0].first, "a");
    EXPECT_EQ(f.metadata()[0].second.as_string(), "x");
}

TEST(GgufWriter, FailedFillLeavesNoFile) {
    gguf::Writer w;
    w.add_tensor("t", DType::F32, {4}, [](uint8_t*, uint64_t) { throw Error("source vanished"); });
    auto dir = temp_dir("gguf-fail");
    EXPECT_THROW(w.write(dir / "out.gguf"), Error);
    EXPECT_FALSE(std::filesystem::exists(dir / "out.gguf"));
    EXPECT_FALSE(std::filesystem::exists(dir / "out.gguf.tmp"));
}
