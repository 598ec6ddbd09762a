// Opening a GGUF file and looking things up in it.
#include <system_error>

#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"

namespace tandem::gguf {

File File::open(const std::filesystem::path& path, OpenOptions options) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw Error("gguf: cannot open " + path.string() + ": " + ec.message());
    if (size < 24)
        throw Error("gguf: " + path.string() + ": file of " + std::to_string(size) +
                    " bytes is too small for a GGUF header");
    // The header is parsed straight from a whole-file mapping: only the pages touched are read.
    auto whole = std::make_shared<MappedRange>(path, 0, size);
    File f = parse(whole->data(), size_t(whole->size()), path);
    if (options.map_all) f.data_map_ = std::move(whole);
    return f;
}

const Value* File::find(std::string_view key) const {
    for (const auto& [k, v] : metadata_)
        if (k == key) return &v;
    return nullptr;
}

namespace {
const Value& require(const File& f, std::string_view key) {
    const Value* v = f.find(key);
    if (!v) throw Error("gguf: " + f.path().string() + ": key '" + std::string(key) + "' missing");
    return *v;
}

template <typename Fn>
auto convert(const File& f, std::string_view key, const Value& v, Fn fn) {
    try {
        return fn(v);
    } catch (const Error& e) {
        std::string inner = e.what();
        if (inner.rfind("gguf: ", 0) == 0) inner.erase(0, 6);
        throw Error("gguf: " + f.path().string() + ": key '" + std::string(key) + "': " + inner);
    }
}

bool is_integer_type(ValueType t) {
    switch (t) {
        case ValueType::UInt8:
        case ValueType::Int8:
        case ValueType::UInt16:
        case ValueType::Int16:
        case ValueType::UInt32:
        case ValueType::Int32:
        case ValueType::UInt64:
        case ValueType::Int64:
            return true;
        default:
            return false;
    }
}

uint64_t to_u64(const File& f, std::string_view key, const Value& v) {
    // Integer keys stay integers: a float context length is a broken file, not a value to round.
    if (!is_integer_type(v.type()))
        throw Error("gguf: " + f.path().string() + ": key '" + std::string(key) + "' is " +
                    std::string(value_type_name(v.type())) + ", expected an integer");
    return convert(f, key, v, [](const Value& x) { return x.as_u64(); });
}
}  // namespace

std::string File::get_string(std::string_view key) const {
    return convert(*this, key, require(*this, key), [](const Value& v) { return v.as_string(); });
}
uint64_t File::get_u64(std::string_view key) const {
    return to_u64(*this, key, require(*this, key));
}
double File::get_f64(std::string_view key) const {
    return convert(*this, key, require(*this, key), [](const Value& v) { return v.as_f64(); });
}
std::string File::get_string(std::string_view key, std::string def) const {
    const Value* v = find(key);
    return v ? convert(*this, key, *v, [](const Value& x) { return x.as_string(); }) : def;
}
uint64_t File::get_u64(std::string_view key, uint64_t def) const {
    const Value* v = find(key);
    return v ? to_u64(*this, key, *v) : def;
}
double File::get_f64(std::string_view key, double def) const {
    const Value* v = find(key);
    return v ? convert(*this, key, *v, [](const Value& x) { return x.as_f64(); }) : def;
}
bool File::get_bool(std::string_view key, bool def) const {
    const Value* v = find(key);
    return v ? convert(*this, key, *v, [](const Value& x) { return x.as_bool(); }) : def;
}

const TensorInfo* File::tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const uint8_t* File::tensor_data(const TensorInfo& t) const {
    if (!data_map_)
        throw Error("gguf: " + path_.string() + ": tensor '" + t.name +
                    "': file not mapped (opened with map_all = false; use map_range)");
    return data_map_->data() + data_offset_ + t.offset;
}

MappedRange File::map_range(uint64_t offset, uint64_t size) const {
    const uint64_t data_size = file_size_ > data_offset_ ? file_size_ - data_offset_ : 0;
    if (offset > data_size || size > data_size - offset)
        throw Error("gguf: " + path_.string() + ": range [" + std::to_string(offset) + ", +" +
                    std::to_string(size) + ") past end of data section (size " +
                    std::to_string(data_size) + ")");
    return MappedRange(path_, data_offset_ + offset, size);
}

}  // namespace tandem::gguf
