// tandem-cli synth: a random-weight GGUF in the exact shapes of a real model (benchmarks).
#include <cstdio>

#include "command.h"
#include "tandem/common/error.h"
#include "tandem/engine/synth.h"

namespace {

struct SynthOptions {
    std::string like, type = "q4_0", out;
    uint64_t seed = 1;
};

tandem::cli::Register reg(
    "synth", "Write a random-weight GGUF shaped like a real model", [](CLI::App& sub) {
        auto o = std::make_shared<SynthOptions>();
        std::string names;
        for (const auto& n : tandem::engine::synthetic_model_names())
            names += (names.empty() ? "" : ", ") + n;
        sub.add_option("--like", o->like, "model shape: " + names)->required();
        sub.add_option("--type", o->type,
                       "type of the matrices (f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k, ...)")
            ->capture_default_str();
        sub.add_option("-o,--output", o->out, "output GGUF file")->required();
        sub.add_option("--seed", o->seed)->capture_default_str();
        return [o]() -> int {
            auto t = tandem::dtype_from_name(o->type);
            if (!t) throw tandem::Error("synth: unknown type '" + o->type + "'");
            tandem::engine::write_synthetic_model(o->like, *t, o->out, o->seed);
            std::printf("wrote %s (%s, %s)\n", o->out.c_str(), o->like.c_str(), o->type.c_str());
            return 0;
        };
    });

}  // namespace
