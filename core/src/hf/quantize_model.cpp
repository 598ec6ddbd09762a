// GGUF -> quantised GGUF, streaming: the writer asks for one tensor at a time; its input is
// mapped and converted in slabs of rows (so even a 1 GiB f32 embedding table is never resident
// at once) and its output rows are quantised on several threads.
#include <algorithm>
#include <thread>

#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"
#include "tandem/hf/quantize.h"
#include "tandem/quant/quant.h"

namespace tandem::hf {
namespace {

// Input bytes mapped at a time while converting one tensor.
constexpr uint64_t kSlabBytes = 32ull << 20;

int64_t first_u64(const gguf::File& f, const std::string& key) {
    const gguf::Value* v = f.find(key);
    if (!v) return 0;
    if (v->is_array()) {
        const auto& items = v->as_array().items;
        return items.empty() ? 0 : int64_t(items.front().as_u64());
    }
    return int64_t(v->as_u64());
}

MixFacts facts_of(const gguf::File& f) {
    MixFacts m;
    m.arch = f.get_string("general.architecture", "");
    if (m.arch.empty())
        throw Error("quantize: " + f.path().string() + " has no general.architecture");
    m.n_layer = first_u64(f, m.arch + ".block_count");
    m.n_expert = first_u64(f, m.arch + ".expert_count");
    m.n_head = first_u64(f, m.arch + ".attention.head_count");
    m.n_head_kv = first_u64(f, m.arch + ".attention.head_count_kv");
    if (m.n_head_kv == 0) m.n_head_kv = m.n_head;
    if (m.n_layer <= 0)
        throw Error("quantize: " + f.path().string() + " has no " + m.arch + ".block_count");
    return m;
}

bool is_float_type(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

}  // namespace

QuantizeResult quantize_gguf(const std::filesystem::path& src, const std::filesystem::path& out,
                             const QuantizeOptions& options) {
    if (!std::filesystem::exists(src)) throw Error("quantize: " + src.string() + " does not exist");
    if (std::filesystem::exists(out) && std::filesystem::equivalent(src, out))
        throw Error("quantize: output " + out.string() + " is the input file");
    const gguf::File f = gguf::File::open(src, gguf::OpenOptions{.map_all = false});
    if (f.get_u64("split.count", 1) > 1)
        throw Error(
            "quantize: " + src.string() +
            " is one part of a split GGUF; merge the parts first (llama-gguf-split --merge)");
    const MixFacts facts = facts_of(f);

    std::vector<TensorDesc> descs;
    for (const auto& t : f.tensors()) descs.push_back({t.name, t.type, t.shape});
    const auto choices = plan_quant_types(descs, options.scheme, facts);

    QuantizeResult r;
    r.n_tensors = descs.size();
    for (size_t i = 0; i < descs.size(); ++i) {
        const auto& t = f.tensors()[i];
        const DType to = choices[i].type;
        if (to != t.type && !is_float_type(t.type))
            throw Error("quantize: " + src.string() + ": tensor '" + t.name + "' is already " +
                        std::string(dtype_name(t.type)) +
                        "; quantize from an F32, F16 or BF16 file (requantizing loses quality)");
        if (to != t.type && !quant::can_quantize(to))
            throw Error("quantize: tensor '" + t.name + "': no quantizer for " +
                        std::string(dtype_name(to)));
        r.n_quantized += choices[i].quantized && to != t.type;
        r.n_fallback += choices[i].fallback;
        r.bytes_in += t.nbytes;
        r.bytes_out += t.n_rows() * row_bytes(to, t.row_elems());
        ++r.mix[to];
    }

    gguf::Writer w(f.alignment());
    for (const auto& [k, v] : f.metadata())
        if (!k.starts_with("split.")) w.set(k, v);
    if (!options.name.empty()) w.set("general.name", gguf::Value::string(options.name));
    w.set("general.quantization_version", gguf::Value::u32(2));  // ggml's QNT_VERSION
    w.set("general.file_type", gguf::Value::u32(file_type_of(options.scheme)));

    const int threads = options.threads > 0
                            ? options.threads
                            : int(std::max(1u, std::thread::hardware_concurrency()));
    QuantizeProgress progress;
    progress.n_tensors = descs.size();
    progress.bytes_total = r.bytes_in;
    std::vector<float> f32;
    for (size_t i = 0; i < descs.size(); ++i) {
        const DType to = choices[i].type;
        w.add_tensor(f.tensors()[i].name, to, f.tensors()[i].shape,
                     [&, i, to](uint8_t* dst, uint64_t nbytes) {
                         const gguf::TensorInfo& t = f.tensors()[i];
                         progress.tensor_index = i;
                         progress.tensor = t.name;
                         if (options.progress) options.progress(progress);
                         const uint64_t n_rows = t.n_rows(), n_per_row = t.row_elems();
                         const uint64_t src_row = row_bytes(t.type, n_per_row),
                                        dst_row = row_bytes(to, n_per_row);
                         if (nbytes != n_rows * dst_row)
                             throw Error("quantize: internal size mismatch");
                         const uint64_t slab_rows =
                             std::max<uint64_t>(1, kSlabBytes / std::max<uint64_t>(1, src_row));
                         for (uint64_t r0 = 0; r0 < n_rows; r0 += slab_rows) {
                             const uint64_t rows = std::min(slab_rows, n_rows - r0);
                             const gguf::MappedRange in =
                                 f.map_range(t.offset + r0 * src_row, rows * src_row);
                             if (to == t.type) {
                                 std::copy_n(in.data(), rows * src_row, dst + r0 * dst_row);
                             } else {
                                 const float* x = reinterpret_cast<const float*>(in.data());
                                 if (t.type != DType::F32) {
                                     f32.resize(rows * n_per_row);
                                     for (uint64_t r = 0; r < rows; ++r)
                                         quant::dequantize_row(t.type, in.data() + r * src_row,
                                                               f32.data() + r * n_per_row,
                                                               int64_t(n_per_row));
                                     x = f32.data();
                                 }
                                 quantize_rows(to, x, int64_t(rows), int64_t(n_per_row),
                                               dst + r0 * dst_row, threads,
                                               "tensor '" + t.name + "'");
                             }
                             progress.bytes_done += rows * src_row;
                             if (options.progress) options.progress(progress);
                         }
                     });
    }
    w.write(out);
    std::vector<float>().swap(f32);
    return r;
}

}  // namespace tandem::hf
