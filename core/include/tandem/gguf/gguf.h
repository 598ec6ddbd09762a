#pragma once
// GGUF v3 (also reads v2) as written by llama.cpp's converter. The reader parses the header,
// metadata and tensor table with bounds/overflow checks on every size and offset and maps tensor
// data lazily: a whole-file map for ordinary use, or only the byte ranges a shard needs
// (map_range), so a node never maps or reads what it does not use.
//
// Shapes follow ggml: shape[0] is the fastest-varying dimension (a weight matrix of
// n_out rows by n_in columns has shape {n_in, n_out}).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tandem/common/dtype.h"

namespace tandem::gguf {

enum class ValueType : uint32_t {
    UInt8 = 0, Int8 = 1, UInt16 = 2, Int16 = 3, UInt32 = 4, Int32 = 5, Float32 = 6, Bool = 7,
    String = 8, Array = 9, UInt64 = 10, Int64 = 11, Float64 = 12,
};
// "u32", "string", "array", ... for messages and `tandem-cli inspect`.
std::string_view value_type_name(ValueType t);

// One metadata value. Arrays keep their element type (nested arrays allowed).
class Value {
public:
    struct Array {
        ValueType elem_type = ValueType::UInt8;
        std::vector<Value> items;
        bool operator==(const Array&) const = default;
    };
    using Storage = std::variant<uint64_t, int64_t, double, bool, std::string, Array>;

    Value() = default;
    Value(ValueType t, Storage s) : type_(t), storage_(std::move(s)) {}
    static Value u32(uint32_t v) { return {ValueType::UInt32, uint64_t(v)}; }
    static Value i32(int32_t v) { return {ValueType::Int32, int64_t(v)}; }
    static Value u64(uint64_t v) { return {ValueType::UInt64, v}; }
    static Value f32(float v) { return {ValueType::Float32, double(v)}; }
    static Value boolean(bool v) { return {ValueType::Bool, v}; }
    static Value string(std::string v) { return {ValueType::String, std::move(v)}; }
    static Value array(ValueType elem, std::vector<Value> items) {
        return {ValueType::Array, Array{elem, std::move(items)}};
    }

    ValueType type() const { return type_; }
    bool is_array() const { return type_ == ValueType::Array; }
    // Conversions throw tandem::Error naming the expected type when the value is not numeric /
    // not a string / not an array.
    uint64_t as_u64() const;
    int64_t as_i64() const;
    double as_f64() const;
    bool as_bool() const;
    const std::string& as_string() const;
    const Array& as_array() const;
    const Storage& storage() const { return storage_; }
    bool operator==(const Value&) const = default;

private:
    ValueType type_ = ValueType::UInt8;
    Storage storage_ = uint64_t(0);
};

struct TensorInfo {
    std::string name;
    DType type = DType::F32;
    std::vector<uint64_t> shape;  // ggml order, shape[0] fastest
    uint64_t offset = 0;          // from the start of the data section
    uint64_t nbytes = 0;          // checked: matches type and shape, inside the file
    uint64_t n_elements() const;
    uint64_t row_elems() const { return shape.empty() ? 1 : shape[0]; }
    uint64_t n_rows() const;  // product of shape[1..]
};

// A read-only mapping of part of a file; unmapped on destruction.
class MappedRange {
public:
    MappedRange() = default;
    MappedRange(const std::filesystem::path& path, uint64_t offset, uint64_t size);
    ~MappedRange();
    MappedRange(MappedRange&&) noexcept;
    MappedRange& operator=(MappedRange&&) noexcept;
    MappedRange(const MappedRange&) = delete;
    MappedRange& operator=(const MappedRange&) = delete;

    const uint8_t* data() const { return data_; }
    uint64_t size() const { return size_; }
    uint64_t offset() const { return offset_; }

private:
    void* base_ = nullptr;     // page-aligned mapping start
    size_t base_len_ = 0;
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
    uint64_t offset_ = 0;
};

struct OpenOptions {
    bool map_all = true;  // map the whole data section at open (false: use map_range)
};

class File {
public:
    // Throws tandem::Error with the file name and the bad field ("gguf: model.gguf: tensor 12
    // 'blk.0.attn_q.weight': data [off, off+n) past end of file (size S)").
    static File open(const std::filesystem::path& path, OpenOptions options = {});
    // Parses a whole GGUF file held in memory with the same checks as open(); nothing is
    // mapped, so tensor_data throws. `name` is used in messages. (Entry point of the fuzzer.)
    static File parse(const uint8_t* data, size_t size, const std::filesystem::path& name);

    const std::filesystem::path& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }  // absolute file offset of data section
    uint64_t file_size() const { return file_size_; }

    const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
    const Value* find(std::string_view key) const;
    // Typed getters: throw tandem::Error naming the key when missing or of the wrong type.
    std::string get_string(std::string_view key) const;
    uint64_t get_u64(std::string_view key) const;
    double get_f64(std::string_view key) const;
    // With a default when missing (still an error when present with the wrong type).
    std::string get_string(std::string_view key, std::string def) const;
    uint64_t get_u64(std::string_view key, uint64_t def) const;
    double get_f64(std::string_view key, double def) const;
    bool get_bool(std::string_view key, bool def) const;

    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* tensor(std::string_view name) const;  // nullptr when absent
    // Data of a tensor from the whole-file mapping (map_all); throws when not mapped.
    const uint8_t* tensor_data(const TensorInfo& t) const;
    // Maps [offset, offset+size) of the data section only.
    MappedRange map_range(uint64_t offset, uint64_t size) const;

private:
    std::filesystem::path path_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    uint64_t file_size_ = 0;
    std::vector<std::pair<std::string, Value>> metadata_;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, size_t, std::less<>> tensor_index_;
    std::shared_ptr<MappedRange> data_map_;
};

// Writes GGUF v3. Tensor data comes from a callback so a converter streams one tensor at a
// time (memory bounded by the largest tensor, not the model).
class Writer {
public:
    explicit Writer(uint64_t alignment = 32) : alignment_(alignment) {}
    void set(std::string key, Value value);  // replaces an existing key, keeps first position
    using DataFn = std::function<void(uint8_t* dst, uint64_t nbytes)>;
    void add_tensor(std::string name, DType type, std::vector<uint64_t> shape, DataFn fill);
    void add_tensor(std::string name, DType type, std::vector<uint64_t> shape, const void* data);
    // Writes to path + ".tmp" then renames, so a failed write never leaves a half file.
    void write(const std::filesystem::path& path) const;

private:
    struct PendingTensor {
        std::string name;
        DType type;
        std::vector<uint64_t> shape;
        DataFn fill;
    };
    uint64_t alignment_;
    std::vector<std::pair<std::string, Value>> metadata_;
    std::vector<PendingTensor> tensors_;
};

}  // namespace tandem::gguf
