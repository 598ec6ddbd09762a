// tandem-cli inspect FILE.gguf: the metadata and the tensor table of a GGUF file.
#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "tandem/gguf/gguf.h"

namespace {

using tandem::gguf::Value;
using tandem::gguf::ValueType;

std::string quoted(const std::string& s, size_t max) {
    std::string r = "\"";
    for (size_t i = 0; i < s.size() && i < max; ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c == '"' || c == '\\') {
            r += '\\';
            r += char(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            r += buf;
        } else {
            r += char(c);
        }
    }
    if (s.size() > max) r += "...";
    return r + "\"";
}

std::string show(const Value& v, size_t max_items) {
    switch (v.type()) {
        case ValueType::String:
            return quoted(v.as_string(), 200);
        case ValueType::Bool:
            return v.as_bool() ? "true" : "false";
        case ValueType::Float32:
        case ValueType::Float64: {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.9g", v.as_f64());
            return buf;
        }
        case ValueType::Array: {
            const auto& a = v.as_array();
            std::string r = "[";
            for (size_t i = 0; i < a.items.size() && i < max_items; ++i)
                r += (i ? ", " : "") + show(a.items[i], max_items);
            if (a.items.size() > max_items)
                r += ", ... (" + std::to_string(a.items.size()) + " items)";
            return r + "]";
        }
        case ValueType::Int8:
        case ValueType::Int16:
        case ValueType::Int32:
        case ValueType::Int64:
            return std::to_string(v.as_i64());
        default:
            return std::to_string(v.as_u64());
    }
}

std::string type_of(const Value& v) {
    if (!v.is_array()) return std::string(tandem::gguf::value_type_name(v.type()));
    return "array<" + std::string(tandem::gguf::value_type_name(v.as_array().elem_type)) + ">";
}

struct Options {
    std::string file;
    size_t max_items = 8;
};

tandem::cli::Register reg(
    "inspect", "Print a GGUF file's metadata and tensor table", [](CLI::App& sub) {
        auto o = std::make_shared<Options>();
        sub.add_option("FILE", o->file, "GGUF file")->required();
        sub.add_option("--max-items", o->max_items, "Array items shown per key (default 8)");
        return [o]() -> int {
            const auto f = tandem::gguf::File::open(o->file, {.map_all = false});
            std::printf(
                "file: %s\nversion: %u\nalignment: %llu\ndata offset: %llu\nfile size: %llu\n",
                o->file.c_str(), f.version(), (unsigned long long)f.alignment(),
                (unsigned long long)f.data_offset(), (unsigned long long)f.file_size());
            std::printf("\nmetadata (%zu keys):\n", f.metadata().size());
            for (const auto& [k, v] : f.metadata())
                std::printf("  %-45s %-14s %s\n", k.c_str(), type_of(v).c_str(),
                            show(v, o->max_items).c_str());
            uint64_t total = 0, params = 0;
            std::printf("\ntensors (%zu):\n", f.tensors().size());
            for (const auto& t : f.tensors()) {
                std::string shape;
                for (size_t i = 0; i < t.shape.size(); ++i)
                    shape += (i ? ", " : "") + std::to_string(t.shape[i]);
                std::printf("  %-40s %-7s [%s]  offset %llu  %llu bytes\n", t.name.c_str(),
                            std::string(tandem::dtype_name(t.type)).c_str(), shape.c_str(),
                            (unsigned long long)t.offset, (unsigned long long)t.nbytes);
                total += t.nbytes;
                params += t.n_elements();
            }
            std::printf("\n%llu parameters, %.2f MiB of tensor data\n", (unsigned long long)params,
                        double(total) / (1024.0 * 1024.0));
            return 0;
        };
    });

}  // namespace
