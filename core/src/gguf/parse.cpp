// GGUF header, metadata and tensor table parsing. The layout (llama.cpp's gguf.md):
//   magic "GGUF", u32 version, u64 tensor_count, u64 kv_count,
//   kv_count x { string key, u32 type, value },
//   tensor_count x { string name, u32 n_dims, u64 dims[n_dims], u32 type, u64 offset },
//   padding to general.alignment, data section.
// Strings are u64 length + bytes; arrays are u32 element type + u64 count + elements.
#include <limits>
#include <set>

#include "byte_cursor.h"
#include "tandem/gguf/gguf.h"

namespace tandem::gguf {
namespace {

using detail::ByteCursor;

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian u32
constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS
// Nested arrays are legal but nobody nests deeply; the cap keeps recursion off the stack limit.
constexpr int kMaxArrayDepth = 8;

// Smallest encoding of one value of a type, used to cap counts by the bytes left.
uint64_t min_encoded_size(ValueType t) {
    switch (t) {
        case ValueType::UInt8:
        case ValueType::Int8:
        case ValueType::Bool:
            return 1;
        case ValueType::UInt16:
        case ValueType::Int16:
            return 2;
        case ValueType::UInt32:
        case ValueType::Int32:
        case ValueType::Float32:
            return 4;
        case ValueType::UInt64:
        case ValueType::Int64:
        case ValueType::Float64:
        case ValueType::String:
            return 8;
        case ValueType::Array:
            return 12;
    }
    return 1;
}

bool known_value_type(uint32_t t) {
    return t <= uint32_t(ValueType::Float64);
}

Value read_value(ByteCursor& c, ValueType type, const std::string& key, int depth) {
    const char* f = key.c_str();
    switch (type) {
        case ValueType::UInt8:
            return {type, uint64_t(c.read<uint8_t>(f))};
        case ValueType::Int8:
            return {type, int64_t(c.read<int8_t>(f))};
        case ValueType::UInt16:
            return {type, uint64_t(c.read<uint16_t>(f))};
        case ValueType::Int16:
            return {type, int64_t(c.read<int16_t>(f))};
        case ValueType::UInt32:
            return {type, uint64_t(c.read<uint32_t>(f))};
        case ValueType::Int32:
            return {type, int64_t(c.read<int32_t>(f))};
        case ValueType::UInt64:
            return {type, c.read<uint64_t>(f)};
        case ValueType::Int64:
            return {type, c.read<int64_t>(f)};
        case ValueType::Float32:
            return {type, double(c.read<float>(f))};
        case ValueType::Float64:
            return {type, c.read<double>(f)};
        case ValueType::Bool: {
            const uint8_t b = c.read<uint8_t>(f);
            if (b > 1)
                c.fail("key '" + key + "': bool value " + std::to_string(b) + " is not 0 or 1");
            return {type, b != 0};
        }
        case ValueType::String:
            return {type, c.read_string(f)};
        case ValueType::Array: {
            if (depth >= kMaxArrayDepth)
                c.fail("key '" + key + "': arrays nested deeper than " +
                       std::to_string(kMaxArrayDepth));
            const uint32_t et = c.read<uint32_t>(f);
            if (!known_value_type(et))
                c.fail("key '" + key + "': unknown array element type " + std::to_string(et));
            const auto elem = ValueType(et);
            const uint64_t n = c.read<uint64_t>(f);
            if (n > c.remaining() / min_encoded_size(elem))
                c.fail("key '" + key + "': array count " + std::to_string(n) +
                       " cannot fit in the " + std::to_string(c.remaining()) +
                       " bytes left in the file");
            Value::Array arr{elem, {}};
            arr.items.reserve(size_t(n));
            for (uint64_t i = 0; i < n; ++i)
                arr.items.push_back(read_value(c, elem, key, depth + 1));
            return {type, std::move(arr)};
        }
    }
    c.fail("key '" + key + "': unknown value type " + std::to_string(uint32_t(type)));
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t& out) {
    return __builtin_mul_overflow(a, b, &out);
}

}  // namespace

uint64_t TensorInfo::n_elements() const {
    uint64_t n = 1;
    for (auto d : shape) n *= d;  // checked at parse time
    return n;
}

uint64_t TensorInfo::n_rows() const {
    uint64_t n = 1;
    for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
    return n;
}

File File::parse(const uint8_t* data, size_t size, const std::filesystem::path& name) {
    ByteCursor c(data, size, name.string());
    File f;
    f.path_ = name;
    f.file_size_ = size;

    const uint32_t magic = c.read<uint32_t>("magic");
    if (magic != kMagic) c.fail("not a GGUF file (bad magic)");
    f.version_ = c.read<uint32_t>("version");
    if (f.version_ == 1) c.fail("GGUF version 1 is not supported (re-convert the model)");
    if (f.version_ != 2 && f.version_ != 3) {
        // A big-endian file has its version byte-swapped: 3 reads as 0x03000000.
        if (__builtin_bswap32(f.version_) == 2 || __builtin_bswap32(f.version_) == 3)
            c.fail("big-endian GGUF files are not supported");
        c.fail("unsupported GGUF version " + std::to_string(f.version_));
    }
    const uint64_t n_tensors = c.read<uint64_t>("tensor_count");
    const uint64_t n_kv = c.read<uint64_t>("kv_count");
    // Minimum encodings: a kv is key length (8) + type (4) + 1 byte of value; a tensor info is
    // name length (8) + n_dims (4) + type (4) + offset (8).
    if (n_kv > c.remaining() / 13)
        c.fail("kv_count " + std::to_string(n_kv) + " cannot fit in a file of " +
               std::to_string(size) + " bytes");
    if (n_tensors > c.remaining() / 24)
        c.fail("tensor_count " + std::to_string(n_tensors) + " cannot fit in a file of " +
               std::to_string(size) + " bytes");

    f.metadata_.reserve(size_t(n_kv));
    std::set<std::string, std::less<>> keys;
    for (uint64_t i = 0; i < n_kv; ++i) {
        std::string key = c.read_string("metadata key");
        if (key.empty()) c.fail("metadata entry " + std::to_string(i) + " has an empty key");
        if (!keys.insert(key).second) c.fail("duplicate metadata key '" + key + "'");
        const uint32_t t = c.read<uint32_t>(key.c_str());
        if (!known_value_type(t))
            c.fail("key '" + key + "': unknown value type " + std::to_string(t));
        Value v = read_value(c, ValueType(t), key, 0);
        f.metadata_.emplace_back(std::move(key), std::move(v));
    }

    if (const Value* a = f.find("general.alignment")) {
        if (a->type() != ValueType::UInt32)
            c.fail("general.alignment is " + std::string(value_type_name(a->type())) +
                   ", expected u32");
        const uint64_t al = a->as_u64();
        if (al == 0 || (al & (al - 1)) != 0)
            c.fail("general.alignment " + std::to_string(al) + " is not a power of two");
        f.alignment_ = al;
    }

    f.tensors_.reserve(size_t(n_tensors));
    for (uint64_t i = 0; i < n_tensors; ++i) {
        TensorInfo t;
        t.name = c.read_string("tensor name");
        const std::string where = "tensor " + std::to_string(i) + " '" + t.name + "'";
        const char* wf = where.c_str();
        if (t.name.empty()) c.fail(where + ": empty name");
        const uint32_t n_dims = c.read<uint32_t>(wf);
        if (n_dims > kMaxDims)
            c.fail(where + ": " + std::to_string(n_dims) + " dimensions (at most 4)");
        uint64_t n_elem = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const uint64_t dim = c.read<uint64_t>(wf);
            if (dim == 0) c.fail(where + ": dimension " + std::to_string(d) + " is 0");
            if (mul_overflows(n_elem, dim, n_elem) || n_elem > uint64_t(INT64_MAX))
                c.fail(where + ": element count overflows");
            t.shape.push_back(dim);
        }
        const uint32_t type_id = c.read<uint32_t>(wf);
        const auto traits = dtype_traits(type_id);
        if (!traits) c.fail(where + ": unknown tensor type " + std::to_string(type_id));
        t.type = traits->type;
        t.offset = c.read<uint64_t>(wf);
        if (t.row_elems() % traits->block_elems != 0)
            c.fail(where + ": row of " + std::to_string(t.row_elems()) +
                   " elements is not a multiple of the " + std::string(traits->name) +
                   " block size " + std::to_string(traits->block_elems));
        const uint64_t row_bytes = t.row_elems() / traits->block_elems * traits->block_bytes;
        if (mul_overflows(row_bytes, t.n_rows(), t.nbytes)) c.fail(where + ": byte size overflows");
        if (t.offset % f.alignment_ != 0)
            c.fail(where + ": data offset " + std::to_string(t.offset) +
                   " is not a multiple of the alignment " + std::to_string(f.alignment_));
        if (f.tensor_index_.count(t.name)) c.fail("duplicate tensor name '" + t.name + "'");
        f.tensor_index_.emplace(t.name, f.tensors_.size());
        f.tensors_.push_back(std::move(t));
    }

    // The data section starts at the next multiple of the alignment after the tensor table.
    const uint64_t end_of_table = c.pos();
    f.data_offset_ = (end_of_table + f.alignment_ - 1) / f.alignment_ * f.alignment_;
    if (f.data_offset_ > size && !f.tensors_.empty())
        c.fail("data section at offset " + std::to_string(f.data_offset_) +
               " starts past end of file (size " + std::to_string(size) + ")");
    const uint64_t data_size = f.data_offset_ <= size ? size - f.data_offset_ : 0;
    for (size_t i = 0; i < f.tensors_.size(); ++i) {
        const auto& t = f.tensors_[i];
        if (t.offset > data_size || t.nbytes > data_size - t.offset)
            c.fail("tensor " + std::to_string(i) + " '" + t.name + "': data [" +
                   std::to_string(t.offset) + ", " + std::to_string(t.offset) + "+" +
                   std::to_string(t.nbytes) + ") past end of data section (size " +
                   std::to_string(data_size) + ")");
    }
    return f;
}

}  // namespace tandem::gguf
