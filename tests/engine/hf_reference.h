#pragma once
// An hf-tiny fixture's transformers reference (prompt ids, float32 logits, greedy continuation)
// and an engine on a named backend, for the tests that run whole models on each GPU backend
// against the CPU backend.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tandem/backend/backend.h"
#include "tandem/engine/engine.h"

namespace tandem::test {

struct HfReference {
    std::vector<int32_t> prompt, greedy;
    std::vector<float> logits;  // [n_prompt, n_vocab]
};

inline HfReference load_hf_reference(const std::filesystem::path& dir) {
    std::ifstream f(dir / "reference.json");
    auto j = nlohmann::json::parse(f);
    HfReference r{j["prompt_ids"].get<std::vector<int32_t>>(),
                  j["greedy_continuation_ids"].get<std::vector<int32_t>>(),
                  {}};
    const auto shape = j["logits_shape"].get<std::vector<int64_t>>();
    r.logits.resize(size_t(shape[0] * shape[1]));
    std::ifstream lf(dir / j["logits_file"].get<std::string>(), std::ios::binary);
    lf.read(reinterpret_cast<char*>(r.logits.data()), std::streamsize(r.logits.size() * 4));
    return r;
}

// A 128-token engine on `backend` (device 0, 2 CPU threads where they matter).
inline std::unique_ptr<engine::Engine> engine_on(const std::string& backend,
                                                 std::shared_ptr<engine::Model> m, DType kv) {
    engine::EngineOptions eo;
    eo.n_ctx = 128;
    eo.kv_type = kv;
    BackendOptions bo;
    bo.threads = 2;
    return std::make_unique<engine::Engine>(m, create_backend(backend, 0, bo), eo);
}

// `ids` fed one token per step (decode steps: the GPU backends' matvec paths, KV cache rows
// written at growing n_past); every step's logits, concatenated. The ids are fixed, not the
// engine's own picks, so two engines see the same inputs however close their logits are.
inline std::vector<float> decode_step_by_step(engine::Engine& e, const std::vector<int32_t>& ids) {
    std::vector<float> all, l;
    for (const int32_t id : ids) {
        e.decode(std::span<const int32_t>(&id, 1), l, false);
        all.insert(all.end(), l.begin(), l.end());
    }
    return all;
}

}  // namespace tandem::test
