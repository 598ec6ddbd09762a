// Our reader and writer against llama.cpp's own Python reader (PyPI `gguf`), run at test time:
// files we write read back the same there, and the real vocabulary GGUFs of the fixtures read the
// same here as there, field by field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "gguf_test_util.h"
#include "python_runner.h"

using namespace tandem;
using namespace tandem::test;
using nlohmann::json;

namespace {

json dump_with_python(const std::filesystem::path& file) {
    auto r = run_script("gguf_dump.py", {file.string()});
    if (r.exit_code != 0) throw std::runtime_error("gguf_dump.py failed on " + file.string());
    return json::parse(r.out);
}

json types_of(const gguf::Value& v) {
    // ReaderField.types: the type, then for arrays the element type (nested: repeated). The
    // Python reader leaves the element type out for an empty array.
    json t = json::array({int(v.type())});
    const gguf::Value* cur = &v;
    while (cur->is_array() && !cur->as_array().items.empty()) {
        const auto& a = cur->as_array();
        t.push_back(int(a.elem_type));
        cur = &a.items[0];
    }
    return t;
}

std::string hex(const uint8_t* p, uint64_t n) {
    static const char* d = "0123456789abcdef";
    std::string s;
    s.reserve(size_t(n) * 2);
    for (uint64_t i = 0; i < n; ++i) {
        s.push_back(d[p[i] >> 4]);
        s.push_back(d[p[i] & 15]);
    }
    return s;
}

// Every metadata field and tensor of `f` against the Python dump of the same file.
void expect_same_as_python(const gguf::File& f, const json& py, bool compare_types) {
    EXPECT_EQ(py["version"].get<uint32_t>(), f.version());
    EXPECT_EQ(py["alignment"].get<uint64_t>(), f.alignment());
    EXPECT_EQ(py["data_offset"].get<uint64_t>(), f.data_offset());
    EXPECT_EQ(py["kv_count"].get<uint64_t>(), f.metadata().size());
    EXPECT_EQ(py["tensor_count"].get<uint64_t>(), f.tensors().size());
    ASSERT_EQ(py["kv"].size(), f.metadata().size());
    for (const auto& [key, value] : f.metadata()) {
        ASSERT_TRUE(py["kv"].contains(key)) << key;
        const auto& p = py["kv"][key];
        if (compare_types) {
            EXPECT_EQ(p["types"], types_of(value)) << key;
        }
        EXPECT_EQ(p["value"], as_python_contents(value)) << key;
    }
    ASSERT_EQ(py["tensors"].size(), f.tensors().size());
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& t = f.tensors()[i];
        const auto& p = py["tensors"][i];
        EXPECT_EQ(p["name"], t.name);
        EXPECT_EQ(p["type"].get<uint32_t>(), uint32_t(t.type)) << t.name;
        EXPECT_EQ(p["shape"].get<std::vector<uint64_t>>(), t.shape) << t.name;
        EXPECT_EQ(p["n_bytes"].get<uint64_t>(), t.nbytes) << t.name;
        EXPECT_EQ(p["offset"].get<uint64_t>(), f.data_offset() + t.offset) << t.name;
        if (p.contains("data_hex")) {
            EXPECT_EQ(p["data_hex"].get<std::string>(), hex(f.tensor_data(t), t.nbytes)) << t.name;
        }
    }
}

}  // namespace

TEST(GgufPythonReference, FilesWeWriteReadTheSameInPython) {
    TANDEM_PYTHON_OR_SKIP();
    for (uint64_t alignment : {32, 128}) {
        auto path = temp_dir("gguf-py") / "sample.gguf";
        sample_writer(sample_tensors(), alignment).write(path);
        auto py = dump_with_python(path);
        auto f = gguf::File::open(path);
        SCOPED_TRACE("alignment " + std::to_string(alignment));
        // The Python reader reports nested arrays' types its own way; values still compare.
        expect_same_as_python(f, py, /*compare_types=*/false);
        for (const auto& [key, value] : f.metadata()) {
            if (key == "test.array_nested") continue;
            EXPECT_EQ(py["kv"][key]["types"], types_of(value)) << key;
        }
        // The tensor data Python found at its offsets is the data we were given.
        auto tensors = sample_tensors();
        for (size_t i = 0; i < tensors.size(); ++i)
            EXPECT_EQ(py["tensors"][i]["data_hex"].get<std::string>(),
                      hex(tensors[i].data.data(), tensors[i].data.size()));
    }
}

// One test per fixture file, so each stays a few seconds.
class GgufVocabFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufVocabFixture, ReadsTheSameAsPython) {
    TANDEM_PYTHON_OR_SKIP();
    TANDEM_FIXTURE_OR_SKIP(file, "tokenizer/gguf-vocab/ggml-vocab-" + GetParam() + ".gguf");
    auto f = gguf::File::open(file);
    auto py = dump_with_python(file);
    expect_same_as_python(f, py, /*compare_types=*/true);
    EXPECT_GT(f.find("tokenizer.ggml.tokens")->as_array().items.size(), 1000u);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GgufVocabFixture,
                         ::testing::Values("deepseek-coder", "falcon", "gpt-2", "llama-spm", "mpt",
                                           "phi-3"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (auto& c : n)
                                 if (c == '-') c = '_';
                             return n;
                         });
