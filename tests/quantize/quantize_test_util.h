#pragma once
// Inputs of the quantizer tests (hf-tiny models converted to f32 by our converter, an edge-case
// model and a 32-layer model written here), sha256 of tensor data, and the llama-quantize
// reference table (data/llama_quantize_reference.tsv, made by make_llama_refs.py).
#include <openssl/sha.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures.h"
#include "tandem/gguf/gguf.h"
#include "tandem/hf/convert.h"
#include "tandem/hf/quantize.h"

namespace tandem::test {

inline const std::vector<std::string>& tiny_models() {
    static const std::vector<std::string> m = {"llama-tiny", "qwen2-tiny", "qwen3-tiny",
                                               "qwen3moe-tiny", "gemma3-tiny"};
    return m;
}

inline std::string sha256_hex(const uint8_t* data, size_t n) {
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(data, n, md);
    static const char* hex = "0123456789abcdef";
    std::string s;
    for (unsigned char c : md) {
        s += hex[c >> 4];
        s += hex[c & 15];
    }
    return s;
}

// A deterministic value stream (the same on every platform and standard library).
class Lcg {
  public:
    explicit Lcg(uint64_t seed) : s_(seed * 2654435761u + 1) {}
    float uniform() {  // [-0.5, 0.5)
        s_ = s_ * 6364136223846793005ull + 1442695040888963407ull;
        return float(s_ >> 40) / float(1 << 24) - 0.5f;
    }

  private:
    uint64_t s_;
};

// hf-tiny/<name> converted to f32 GGUF once per process, or nullopt without the fixture.
inline std::optional<std::filesystem::path> tiny_f32(const std::string& name) {
    static std::map<std::string, std::filesystem::path> done;
    if (auto it = done.find(name); it != done.end()) return it->second;
    auto src = fixture("hf-tiny/" + name);
    if (!src) return std::nullopt;
    const auto out = temp_dir("quantize-inputs") / (name + ".f32.gguf");
    hf::ConvertOptions o;
    o.type = DType::F32;
    hf::convert_hf(*src, out, o);
    return done[name] = out;
}

// Rows a quantizer can get wrong, as an [n_cols] row generator: zeros, a constant, large values,
// tiny (f16-subnormal scale) values, one outlier, exact rounding ties, one sign only.
inline std::vector<float> edge_row(int kind, int64_t n, Lcg& rng) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
        const float u = rng.uniform();
        switch (kind % 9) {
            case 0:
                v[j] = 0.f;
                break;
            case 1:
                v[j] = 0.25f;
                break;
            case 2:
                v[j] = 2e5f * u;
                break;  // scales near f16's top
            case 3:
                v[j] = 1e-30f * u;
                break;  // scales below f16's smallest
            case 4:
                v[j] = j == 7 ? 1000.f : 1e-3f * u;
                break;  // one outlier per row
            case 5:
                v[j] = float(j % 32) - 15.5f;
                break;  // halves: rounding ties
            case 6:
                v[j] = -std::fabs(u) - 0.01f;
                break;  // negative only
            case 7:
                v[j] = 1e-8f * u;
                break;
            default:
                v[j] = (j % 16 == 0) ? 3.f : 0.f;
                break;  // sparse
        }
    }
    return v;
}

// llama-tiny with edge-case rows in blk.0.attn_q/attn_k and two extra tensors whose rows do not
// fit a 256 block (96 columns) or even a 32 block (48 columns: F16 fallback).
inline std::optional<std::filesystem::path> edge_case_model() {
    static std::optional<std::filesystem::path> done;
    if (done) return done;
    auto base = tiny_f32("llama-tiny");
    if (!base) return std::nullopt;
    const auto f = gguf::File::open(*base);
    gguf::Writer w(f.alignment());
    for (const auto& [k, v] : f.metadata()) w.set(k, v);
    auto edited = std::make_shared<std::map<std::string, std::vector<float>>>();
    Lcg rng(7);
    for (const auto& t : f.tensors()) {
        std::vector<float> v(static_cast<size_t>(t.n_elements()));
        std::memcpy(v.data(), f.tensor_data(t), t.nbytes);
        if (t.name == "blk.0.attn_q.weight" || t.name == "blk.0.attn_k.weight") {
            for (uint64_t r = 0; r < t.n_rows() && r < 36; ++r) {
                auto row = edge_row(int(r), int64_t(t.row_elems()), rng);
                std::copy(row.begin(), row.end(), v.begin() + int64_t(r * t.row_elems()));
            }
        }
        (*edited)[t.name] = std::move(v);
        w.add_tensor(t.name, t.type, t.shape, (*edited)[t.name].data());
    }
    for (auto [name, cols] :
         {std::pair<const char*, int>{"blk.0.odd96.weight", 96}, {"blk.0.odd48.weight", 48}}) {
        std::vector<float> v;
        for (int r = 0; r < 18; ++r) {
            auto row = edge_row(r % 9 == 2 ? 7 : r, cols, rng);  // F16 cannot hold 2e5
            v.insert(v.end(), row.begin(), row.end());
        }
        (*edited)[name] = std::move(v);
        w.add_tensor(name, DType::F32, {uint64_t(cols), 18}, (*edited)[name].data());
    }
    const auto out = temp_dir("quantize-inputs") / "edge-cases.f32.gguf";
    w.write(out);
    return done = out;
}

// A 32-layer llama (256 wide) so the mix rules' per-layer choices show: its tensor table, and
// (for make_llama_refs.py) the model itself with random values.
inline std::vector<hf::TensorDesc> deep_model_tensors() {
    std::vector<hf::TensorDesc> d;
    auto add = [&](const std::string& name, std::vector<uint64_t> shape) {
        d.push_back({name, DType::F32, std::move(shape)});
    };
    add("token_embd.weight", {256, 256});
    add("output_norm.weight", {256});
    add("output.weight", {256, 256});
    for (int l = 0; l < 32; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        add(p + "attn_norm.weight", {256});
        add(p + "attn_q.weight", {256, 256});
        add(p + "attn_k.weight", {256, 64});
        add(p + "attn_v.weight", {256, 64});
        add(p + "attn_output.weight", {256, 256});
        add(p + "ffn_norm.weight", {256});
        add(p + "ffn_gate.weight", {256, 256});
        add(p + "ffn_up.weight", {256, 256});
        add(p + "ffn_down.weight", {256, 256});
    }
    return d;
}

inline hf::MixFacts deep_model_facts() {
    return {"llama", 32, 0, 4, 1};
}

inline void write_deep_model(const std::filesystem::path& out) {
    gguf::Writer w;
    const std::string a = "llama";
    auto u32 = [](uint32_t v) { return gguf::Value::u32(v); };
    w.set("general.architecture", gguf::Value::string(a));
    w.set("general.name", gguf::Value::string("deep32"));
    w.set(a + ".context_length", u32(512));
    w.set(a + ".embedding_length", u32(256));
    w.set(a + ".block_count", u32(32));
    w.set(a + ".feed_forward_length", u32(256));
    w.set(a + ".attention.head_count", u32(4));
    w.set(a + ".attention.head_count_kv", u32(1));
    w.set(a + ".rope.dimension_count", u32(64));
    w.set(a + ".attention.layer_norm_rms_epsilon", gguf::Value::f32(1e-5f));
    w.set(a + ".vocab_size", u32(256));
    std::vector<float> pool(256 * 256);
    Lcg rng(32);
    for (auto& x : pool) x = 0.05f * rng.uniform();
    for (const auto& t : deep_model_tensors()) w.add_tensor(t.name, t.type, t.shape, pool.data());
    w.write(out);
}

struct RefTensor {
    std::string type;  // ggml type name as the gguf package spells it ("Q4_K", "F32")
    std::string sha256;
};
// model -> scheme ("input", "Q4_K_M", ...) -> tensor -> reference
using RefTable = std::map<std::string, std::map<std::string, std::map<std::string, RefTensor>>>;

inline const RefTable& llama_reference() {
    static const RefTable table = [] {
        RefTable t;
        std::ifstream in(source_dir() / "tests/quantize/data/llama_quantize_reference.tsv");
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty() || line[0] == '#') continue;
            std::istringstream ss(line);
            std::string model, scheme, tensor, type, sha;
            std::getline(ss, model, '\t');
            std::getline(ss, scheme, '\t');
            std::getline(ss, tensor, '\t');
            std::getline(ss, type, '\t');
            std::getline(ss, sha, '\t');
            t[model][scheme][tensor] = {type, sha};
        }
        return t;
    }();
    return table;
}

// "q4_k" -> "Q4_K" (the gguf package's names in the reference table).
inline std::string upper(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = char(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace tandem::test
