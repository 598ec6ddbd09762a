#pragma once
// hf-tiny fixtures converted once per test process (f32 weights) for the engine tests.
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "fixtures.h"
#include "tandem/backend/backend.h"
#include "tandem/engine/engine.h"
#include "tandem/hf/convert.h"
#include "tandem/hf/quantize.h"

namespace tandem::test {

// Path of fixture hf-tiny/<name> converted to GGUF with `type`, or nullopt when absent.
inline std::optional<std::filesystem::path> tiny_gguf(const std::string& name,
                                                      DType type = DType::F32) {
    auto src = fixture("hf-tiny/" + name);
    if (!src) return std::nullopt;
    static std::map<std::string, std::filesystem::path> done;
    const std::string key = name + "-" + std::string(dtype_name(type));
    auto it = done.find(key);
    if (it != done.end()) return it->second;
    auto out = temp_dir("engine") / (key + ".gguf");
    // Block types come from the quantizer (llama.cpp's mix for that type) over the f32 file;
    // convert writes only float types.
    std::optional<hf::QuantScheme> scheme;
    if (type == DType::Q8_0) scheme = hf::QuantScheme::Q8_0;
    if (type == DType::Q4_0) scheme = hf::QuantScheme::Q4_0;
    if (type == DType::Q4_K) scheme = hf::QuantScheme::Q4_K_M;
    if (type == DType::Q5_K) scheme = hf::QuantScheme::Q5_K_M;
    if (type == DType::Q6_K) scheme = hf::QuantScheme::Q6_K;
    if (scheme) {
        hf::QuantizeOptions q;
        q.scheme = *scheme;
        q.threads = 2;
        hf::quantize_gguf(*tiny_gguf(name, DType::F32), out, q);
    } else {
        hf::ConvertOptions o;
        o.type = type;
        hf::convert_hf(*src, out, o);
    }
    done[key] = out;
    return out;
}

inline std::unique_ptr<engine::Engine> make_engine(std::shared_ptr<engine::Model> m,
                                                   int64_t n_ctx = 256, DType kv = DType::F32,
                                                   int threads = 2, int64_t n_batch = 512) {
    BackendOptions bo;
    bo.threads = threads;
    engine::EngineOptions eo;
    eo.n_ctx = n_ctx;
    eo.kv_type = kv;
    eo.n_batch = n_batch;
    return std::make_unique<engine::Engine>(m, create_backend("cpu", 0, bo), eo);
}

inline double max_rel_row_error(const std::vector<float>& a, const std::vector<float>& b,
                                int64_t cols) {
    double worst = 0;
    for (size_t r = 0; r * cols < b.size(); ++r) {
        double num = 0, den = 0;
        for (int64_t c = 0; c < cols; ++c) {
            const double d = double(a[r * cols + c]) - b[r * cols + c];
            num += d * d;
            den += double(b[r * cols + c]) * b[r * cols + c];
        }
        worst = std::max(worst, std::sqrt(num / den));
    }
    return worst;
}

}  // namespace tandem::test
