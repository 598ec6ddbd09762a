// The safetensors header: u64 little-endian length, then that many bytes of JSON.
#include <nlohmann/json.hpp>

#include "tandem/common/error.h"
#include "tandem/hf/safetensors.h"

namespace tandem::hf {
namespace {

// The safetensors library itself refuses headers over 100 MB; so do we, before parsing.
constexpr uint64_t kMaxHeader = 100ull << 20;

[[noreturn]] void fail(const std::string& file, const std::string& what) {
    throw Error("safetensors: " + file + ": " + what);
}

std::optional<DType> dtype_of(const std::string& s) {
    if (s == "F32") return DType::F32;
    if (s == "F16") return DType::F16;
    if (s == "BF16") return DType::BF16;
    return std::nullopt;
}

}  // namespace

uint64_t SafeTensor::n_elements() const {
    uint64_t n = 1;
    for (auto d : shape) n *= d;  // checked when parsed
    return n;
}

std::vector<SafeTensor> parse_safetensors_header(const uint8_t* bytes, size_t size,
                                                 uint64_t file_size, const std::string& name) {
    if (size < 8 || file_size < 8) fail(name, "file too small for a safetensors header");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
    if (n > kMaxHeader) fail(name, "header length " + std::to_string(n) + " over the 100 MB limit");
    if (n > file_size - 8 || n > size - 8)
        fail(name, "header length " + std::to_string(n) + " past end of file (size " +
                       std::to_string(file_size) + ")");
    const uint64_t data_start = 8 + n;
    const uint64_t data_size = file_size - data_start;

    auto header =
        nlohmann::json::parse(bytes + 8, bytes + 8 + n, nullptr, /*allow_exceptions=*/false);
    if (header.is_discarded()) fail(name, "header is not valid JSON");
    if (!header.is_object()) fail(name, "header is not a JSON object");

    std::vector<SafeTensor> out;
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == "__metadata__") continue;
        const auto& e = it.value();
        const std::string where = "tensor '" + it.key() + "'";
        if (!e.is_object()) fail(name, where + ": entry is not an object");
        SafeTensor t;
        t.name = it.key();
        auto dt = e.find("dtype");
        if (dt == e.end() || !dt->is_string()) fail(name, where + ": missing dtype");
        auto dtype = dtype_of(dt->get<std::string>());
        if (!dtype)
            fail(name,
                 where + ": dtype " + dt->get<std::string>() + " not supported (F32, F16, BF16)");
        t.dtype = *dtype;
        auto sh = e.find("shape");
        if (sh == e.end() || !sh->is_array()) fail(name, where + ": missing shape");
        uint64_t n_elem = 1;
        for (const auto& d : *sh) {
            if (!d.is_number_unsigned())
                fail(name, where + ": shape entry is not a non-negative integer");
            const uint64_t v = d.get<uint64_t>();
            if (__builtin_mul_overflow(n_elem, v, &n_elem)) fail(name, where + ": shape overflows");
            t.shape.push_back(v);
        }
        auto off = e.find("data_offsets");
        if (off == e.end() || !off->is_array() || off->size() != 2 ||
            !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
            fail(name, where + ": data_offsets must be [begin, end]");
        const uint64_t begin = (*off)[0].get<uint64_t>(), end = (*off)[1].get<uint64_t>();
        if (begin > end || end > data_size)
            fail(name, where + ": data_offsets [" + std::to_string(begin) + ", " +
                           std::to_string(end) + "] outside the data section of " +
                           std::to_string(data_size) + " bytes");
        const uint64_t elem = dtype_traits(t.dtype).block_bytes;
        uint64_t want = 0;
        if (__builtin_mul_overflow(n_elem, elem, &want) || want != end - begin)
            fail(name, where + ": " + std::to_string(end - begin) + " bytes of data for shape of " +
                           std::to_string(n_elem) + " elements of " + dt->get<std::string>());
        t.offset = data_start + begin;
        t.nbytes = end - begin;
        out.push_back(std::move(t));
    }
    // nlohmann's object keeps keys sorted; file order is data order, which streaming prefers.
    std::sort(out.begin(), out.end(), [](const SafeTensor& a, const SafeTensor& b) {
        return a.offset != b.offset ? a.offset < b.offset : a.name < b.name;
    });
    return out;
}

}  // namespace tandem::hf
