// GGUF v3 writer: header and tensor table first, then each tensor's data filled by its callback
// into one reused buffer, so memory stays bounded by the largest tensor.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"

namespace tandem::gguf {
namespace {

class OutFile {
  public:
    explicit OutFile(const std::filesystem::path& p) : path_(p) {
        f_ = std::fopen(p.c_str(), "wb");
        if (!f_) throw Error("gguf: cannot create " + p.string() + ": " + std::strerror(errno));
    }
    ~OutFile() {
        if (f_) std::fclose(f_);
    }
    void bytes(const void* d, size_t n) {
        if (n && std::fwrite(d, 1, n, f_) != n)
            throw Error("gguf: write to " + path_.string() + " failed: " + std::strerror(errno));
        pos_ += n;
    }
    template <typename T>
    void pod(T v) {
        bytes(&v, sizeof v);
    }
    void string(const std::string& s) {
        pod<uint64_t>(s.size());
        bytes(s.data(), s.size());
    }
    void pad_to(uint64_t alignment) {
        static const uint8_t zeros[256] = {};
        uint64_t n = (alignment - pos_ % alignment) % alignment;
        while (n) {
            const size_t k = size_t(std::min<uint64_t>(n, sizeof zeros));
            bytes(zeros, k);
            n -= k;
        }
    }
    void close() {
        FILE* f = f_;
        f_ = nullptr;
        if (std::fflush(f) != 0 || std::fclose(f) != 0)
            throw Error("gguf: write to " + path_.string() + " failed: " + std::strerror(errno));
    }
    uint64_t pos() const { return pos_; }

  private:
    std::filesystem::path path_;
    FILE* f_ = nullptr;
    uint64_t pos_ = 0;
};

void write_value(OutFile& o, const Value& v, const std::string& key) {
    const auto& s = v.storage();
    switch (v.type()) {
        case ValueType::UInt8:
            o.pod<uint8_t>(uint8_t(v.as_u64()));
            return;
        case ValueType::Int8:
            o.pod<int8_t>(int8_t(v.as_i64()));
            return;
        case ValueType::UInt16:
            o.pod<uint16_t>(uint16_t(v.as_u64()));
            return;
        case ValueType::Int16:
            o.pod<int16_t>(int16_t(v.as_i64()));
            return;
        case ValueType::UInt32:
            o.pod<uint32_t>(uint32_t(v.as_u64()));
            return;
        case ValueType::Int32:
            o.pod<int32_t>(int32_t(v.as_i64()));
            return;
        case ValueType::UInt64:
            o.pod<uint64_t>(v.as_u64());
            return;
        case ValueType::Int64:
            o.pod<int64_t>(v.as_i64());
            return;
        case ValueType::Float32:
            o.pod<float>(float(v.as_f64()));
            return;
        case ValueType::Float64:
            o.pod<double>(v.as_f64());
            return;
        case ValueType::Bool:
            o.pod<uint8_t>(v.as_bool() ? 1 : 0);
            return;
        case ValueType::String:
            o.string(v.as_string());
            return;
        case ValueType::Array: {
            const auto& a = std::get<Value::Array>(s);
            o.pod<uint32_t>(uint32_t(a.elem_type));
            o.pod<uint64_t>(a.items.size());
            for (const auto& item : a.items) {
                if (item.type() != a.elem_type)
                    throw Error("gguf: key '" + key + "': array of " +
                                std::string(value_type_name(a.elem_type)) + " holds a " +
                                std::string(value_type_name(item.type())));
                write_value(o, item, key);
            }
            return;
        }
    }
    throw Error("gguf: key '" + key + "': unknown value type");
}

uint64_t tensor_nbytes(const std::string& name, DType type, const std::vector<uint64_t>& shape) {
    const auto& tr = dtype_traits(type);
    if (shape.empty() || shape.size() > 4)
        throw Error("gguf: tensor '" + name + "': " + std::to_string(shape.size()) +
                    " dimensions (1 to 4)");
    uint64_t rows = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == 0)
            throw Error("gguf: tensor '" + name + "': dimension " + std::to_string(i) + " is 0");
        if (i > 0 && __builtin_mul_overflow(rows, shape[i], &rows))
            throw Error("gguf: tensor '" + name + "': size overflows");
    }
    if (shape[0] % tr.block_elems != 0)
        throw Error("gguf: tensor '" + name + "': row of " + std::to_string(shape[0]) +
                    " elements is not a multiple of the " + std::string(tr.name) + " block size " +
                    std::to_string(tr.block_elems));
    uint64_t n = 0;
    if (__builtin_mul_overflow(shape[0] / tr.block_elems * tr.block_bytes, rows, &n))
        throw Error("gguf: tensor '" + name + "': size overflows");
    return n;
}

}  // namespace

void Writer::set(std::string key, Value value) {
    if (key.empty()) throw Error("gguf: metadata key must not be empty");
    for (auto& [k, v] : metadata_)
        if (k == key) {
            v = std::move(value);
            return;
        }
    metadata_.emplace_back(std::move(key), std::move(value));
}

void Writer::add_tensor(std::string name, DType type, std::vector<uint64_t> shape, DataFn fill) {
    tensor_nbytes(name, type, shape);  // validates now, where the caller can tell which tensor
    for (const auto& t : tensors_)
        if (t.name == name) throw Error("gguf: duplicate tensor name '" + name + "'");
    tensors_.push_back({std::move(name), type, std::move(shape), std::move(fill)});
}

void Writer::add_tensor(std::string name, DType type, std::vector<uint64_t> shape,
                        const void* data) {
    const auto* src = static_cast<const uint8_t*>(data);
    add_tensor(std::move(name), type, std::move(shape),
               [src](uint8_t* dst, uint64_t n) { std::memcpy(dst, src, size_t(n)); });
}

void Writer::write(const std::filesystem::path& path) const {
    if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0 || alignment_ > UINT32_MAX)
        throw Error("gguf: alignment " + std::to_string(alignment_) + " is not a power of two");
    auto metadata = metadata_;
    bool has_alignment = false;
    for (const auto& [k, v] : metadata)
        if (k == "general.alignment") {
            if (v.type() != ValueType::UInt32 || v.as_u64() != alignment_)
                throw Error("gguf: general.alignment must be the writer's alignment (u32 " +
                            std::to_string(alignment_) + ")");
            has_alignment = true;
        }
    if (!has_alignment && alignment_ != 32)
        metadata.emplace_back("general.alignment", Value::u32(uint32_t(alignment_)));

    std::vector<uint64_t> sizes, offsets;
    uint64_t off = 0;
    for (const auto& t : tensors_) {
        sizes.push_back(tensor_nbytes(t.name, t.type, t.shape));
        offsets.push_back(off);
        off += (sizes.back() + alignment_ - 1) / alignment_ * alignment_;
    }

    const std::filesystem::path tmp = path.string() + ".tmp";
    try {
        OutFile o(tmp);
        o.pod<uint32_t>(0x46554747);  // "GGUF"
        o.pod<uint32_t>(3);
        o.pod<uint64_t>(tensors_.size());
        o.pod<uint64_t>(metadata.size());
        for (const auto& [k, v] : metadata) {
            o.string(k);
            o.pod<uint32_t>(uint32_t(v.type()));
            write_value(o, v, k);
        }
        for (size_t i = 0; i < tensors_.size(); ++i) {
            const auto& t = tensors_[i];
            o.string(t.name);
            o.pod<uint32_t>(uint32_t(t.shape.size()));
            for (auto d : t.shape) o.pod<uint64_t>(d);
            o.pod<uint32_t>(uint32_t(t.type));
            o.pod<uint64_t>(offsets[i]);
        }
        o.pad_to(alignment_);
        std::vector<uint8_t> buf;
        for (size_t i = 0; i < tensors_.size(); ++i) {
            buf.assign(size_t(sizes[i]), 0);
            tensors_[i].fill(buf.data(), sizes[i]);
            o.bytes(buf.data(), buf.size());
            o.pad_to(alignment_);
        }
        o.close();
        std::error_code ec;
        std::filesystem::rename(tmp, path, ec);
        if (ec)
            throw Error("gguf: cannot rename " + tmp.string() + " to " + path.string() + ": " +
                        ec.message());
    } catch (...) {
        std::error_code ec;
        std::filesystem::remove(tmp, ec);
        throw;
    }
}

}  // namespace tandem::gguf
