// The conversions: HF folder -> GGUF and GGUF -> GGUF, one tensor in memory at a time.
#include "tandem/hf/convert.h"

#include <cstring>

#include "hf_metadata.h"
#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "tandem/gguf/gguf.h"
#include "tandem/hf/safetensors.h"
#include "tandem/quant/fp16.h"
#include "tandem/quant/quant.h"
#include "tandem/tokenizer/vocab.h"

namespace tandem::hf {
namespace {

void check_type(DType t) {
    if (t != DType::F32 && t != DType::F16 && t != DType::BF16)
        throw Error("convert: output type " + std::string(dtype_name(t)) +
                    " is not supported yet (f32, f16, bf16)");
}

// f32 values -> the bytes of `type` (F32, F16, BF16; round to nearest even like numpy/ggml).
void encode(const std::vector<float>& v, DType type, uint8_t* dst, uint64_t nbytes) {
    if (nbytes != row_bytes(type, v.size()))
        throw Error("convert: internal size mismatch (" + std::to_string(nbytes) + " bytes for " +
                    std::to_string(v.size()) + " values)");
    switch (type) {
        case DType::F32:
            std::memcpy(dst, v.data(), nbytes);
            return;
        case DType::F16:
            for (size_t i = 0; i < v.size(); ++i) {
                const uint16_t h = quant::fp32_to_fp16(v[i]);
                std::memcpy(dst + 2 * i, &h, 2);
            }
            return;
        case DType::BF16:
            for (size_t i = 0; i < v.size(); ++i) {
                const uint16_t h = quant::fp32_to_bf16(v[i]);
                std::memcpy(dst + 2 * i, &h, 2);
            }
            return;
        default:
            throw Error("convert: cannot encode " + std::string(dtype_name(type)));
    }
}

// Rows of `rows_total` regrouped per head: HF's [first halves | second halves] become
// interleaved pairs, which is llama.cpp's permute(w, n_head) of convert_hf_to_gguf.py.
std::vector<float> permute_rows(const std::vector<float>& src, uint64_t rows_total,
                                uint64_t heads) {
    const uint64_t cols = src.size() / rows_total;
    const uint64_t per_head = rows_total / heads, half = per_head / 2;
    std::vector<float> out(src.size());
    for (uint64_t h = 0; h < heads; ++h)
        for (uint64_t i = 0; i < half; ++i)
            for (uint64_t j = 0; j < 2; ++j) {
                const uint64_t dst_row = h * per_head + i * 2 + j;
                const uint64_t src_row = h * per_head + j * half + i;
                std::memcpy(&out[dst_row * cols], &src[src_row * cols], cols * sizeof(float));
            }
    return out;
}

std::vector<float> make_values(const TensorPlan& p, const SafetensorsModel& m) {
    using T = TensorPlan::Transform;
    if (p.transform == T::Generated) return p.generated;
    std::vector<float> v;
    for (const auto& s : p.sources) {
        auto part = m.read_f32(m.get(s));
        if (p.sources.size() == 1) {
            v = std::move(part);
        } else {
            v.insert(v.end(), part.begin(), part.end());
        }
    }
    if (p.transform == T::PermuteRows) {
        const auto& t = m.get(p.sources[0]);
        v = permute_rows(v, t.shape[0], p.permute_heads);
    } else if (p.transform == T::AddOne) {
        for (auto& x : v) x += 1.0f;  // Gemma's RMSNorm scales by (1 + w); llama.cpp stores 1 + w
    }
    return v;
}

std::string default_name(const std::filesystem::path& p) {
    auto n = std::filesystem::absolute(p).lexically_normal();
    if (!n.has_filename()) n = n.parent_path();
    return n.filename().string();
}

}  // namespace

uint32_t file_type_of(DType t) {
    switch (t) {
        case DType::F32:
            return 0;
        case DType::F16:
            return 1;
        case DType::BF16:
            return 32;
        default:
            throw Error("convert: no file type for " + std::string(dtype_name(t)));
    }
}

DType output_type(const std::string& name, size_t n_dims, DType type) {
    if (n_dims <= 1 || name.ends_with("_norm.weight") || !name.ends_with(".weight") ||
        name.find("ffn_gate_inp.") != std::string::npos)
        return DType::F32;
    return type;
}

ConvertResult convert_hf(const std::filesystem::path& folder, const std::filesystem::path& out,
                         const ConvertOptions& options) {
    if (!options.quant) check_type(options.type);
    const ModelConfig config = load_config(folder);
    const SafetensorsModel model = SafetensorsModel::open(folder);
    const auto plans = plan_tensors(config, model);

    gguf::Writer w;
    detail::write_model_metadata(
        config, options.name.empty() ? default_name(folder) : options.name,
        options.quant ? file_type_of(*options.quant) : file_type_of(options.type), w);
    // With a quant scheme: llama-quantize's type per tensor, as if quantizing an f32 conversion.
    std::vector<TypeChoice> choices;
    if (options.quant) {
        w.set("general.quantization_version", gguf::Value::u32(2));
        std::vector<TensorDesc> descs;
        for (const auto& p : plans) descs.push_back({p.name, DType::F32, p.shape});
        const MixFacts facts{config.arch, int64_t(config.n_layer), int64_t(config.n_expert),
                             int64_t(config.n_head), int64_t(config.n_head_kv)};
        choices = plan_quant_types(descs, *options.quant, facts);
    }
    ConvertResult r;
    r.arch = config.arch;
    if (tokenizer::has_hf_vocab(folder)) {
        auto vocab = tokenizer::load_hf_vocab(folder);
        // token_embd has config.vocab_size rows and llama.cpp requires as many tokens: pad the
        // ids the tokenizer leaves unused the way convert_hf_to_gguf.py does.
        if (vocab.size() > config.n_vocab)
            throw Error("convert: " + folder.string() + ": the tokenizer has " +
                        std::to_string(vocab.size()) + " tokens but config.json's vocab_size is " +
                        std::to_string(config.n_vocab));
        for (size_t id = vocab.size(); id < config.n_vocab; ++id) {
            vocab.tokens.push_back("[PAD" + std::to_string(id) + "]");
            vocab.types.push_back(tokenizer::TokenType::Unused);
            if (!vocab.scores.empty()) vocab.scores.push_back(-1000.0f);
        }
        tokenizer::write_vocab(vocab, w);
        r.vocab_written = true;
    } else {
        r.vocab_note = "no tokenizer files in " + folder.string() + ": the GGUF has no vocabulary";
        log_warn("convert: " + r.vocab_note);
    }

    QuantizeProgress progress;
    progress.n_tensors = plans.size();
    for (const auto& p : plans) {
        uint64_t n = 1;
        for (auto d : p.shape) n *= d;
        progress.bytes_total += n * sizeof(float);
    }
    for (size_t i = 0; i < plans.size(); ++i) {
        const DType t = options.quant
                            ? choices[i].type
                            : output_type(plans[i].name, plans[i].shape.size(), options.type);
        w.add_tensor(plans[i].name, t, plans[i].shape, [&, i, t](uint8_t* dst, uint64_t nbytes) {
            const auto& p = plans[i];
            progress.tensor_index = i;
            progress.tensor = p.name;
            if (options.progress) options.progress(progress);
            const auto values = make_values(p, model);
            if (t == DType::F32 || !options.quant) {
                encode(values, t, dst, nbytes);
            } else {
                const int64_t n_per_row = int64_t(p.shape[0]);
                quantize_rows(t, values.data(), int64_t(values.size()) / n_per_row, n_per_row,
                              dst, options.threads, "tensor '" + p.name + "'");
            }
            progress.bytes_done += values.size() * sizeof(float);
            if (options.progress) options.progress(progress);
        });
    }
    r.n_tensors = plans.size();
    w.write(out);
    return r;
}

ConvertResult convert_gguf(const std::filesystem::path& src, const std::filesystem::path& out,
                           const ConvertOptions& options) {
    check_type(options.type);
    if (std::filesystem::exists(out) && std::filesystem::equivalent(src, out))
        throw Error("convert: output " + out.string() + " is the input file");
    const auto f = gguf::File::open(src);
    gguf::Writer w(f.alignment());
    // The output holds no quantized tensors, so a quantization_version would be wrong.
    for (const auto& [k, v] : f.metadata())
        if (k != "general.quantization_version") w.set(k, v);
    if (!options.name.empty()) w.set("general.name", gguf::Value::string(options.name));
    w.set("general.file_type", gguf::Value::u32(file_type_of(options.type)));
    ConvertResult r;
    r.arch = f.get_string("general.architecture", "");
    r.vocab_written = f.find("tokenizer.ggml.tokens") != nullptr;
    for (const auto& t : f.tensors()) {
        if (!quant::can_dequantize(t.type))
            throw Error("convert: " + src.string() + ": tensor '" + t.name + "' of type " +
                        std::string(dtype_name(t.type)) + " cannot be converted");
        const DType to = output_type(t.name, t.shape.size(), options.type);
        w.add_tensor(t.name, to, t.shape, [&f, &t, to](uint8_t* dst, uint64_t nbytes) {
            std::vector<float> v(size_t(t.n_elements()));
            const uint8_t* s = f.tensor_data(t);
            const uint64_t rb = row_bytes(t.type, t.row_elems());
            for (uint64_t row = 0; row < t.n_rows(); ++row)
                quant::dequantize_row(t.type, s + row * rb, v.data() + row * t.row_elems(),
                                      int64_t(t.row_elems()));
            encode(v, to, dst, nbytes);
        });
    }
    r.n_tensors = f.tensors().size();
    w.write(out);
    return r;
}

ConvertResult convert(const std::filesystem::path& src, const std::filesystem::path& out,
                      const ConvertOptions& options) {
    if (std::filesystem::is_directory(src)) return convert_hf(src, out, options);
    if (!std::filesystem::exists(src)) throw Error("convert: " + src.string() + " does not exist");
    if (options.quant) {
        const QuantizeResult q =
            quantize_gguf(src, out, {*options.quant, options.threads, options.name, options.progress});
        ConvertResult r;
        const auto written = gguf::File::open(out, gguf::OpenOptions{.map_all = false});
        r.arch = written.get_string("general.architecture", "");
        r.n_tensors = q.n_tensors;
        r.vocab_written = written.find("tokenizer.ggml.tokens") != nullptr;
        return r;
    }
    return convert_gguf(src, out, options);
}

}  // namespace tandem::hf
