// tandem-cli bench: prefill and decode speed of a model, and the memory bandwidth decode
// achieves (weight bytes read per token x tokens/s), the number to hold against the hardware.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "command.h"
#include "runtime_options.h"
#include "tandem/common/error.h"

namespace {

struct BenchOptions {
    tandem::cli::RuntimeOptions rt;
    int n_prompt = 512, n_gen = 128;
    bool json = false;
};

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

tandem::cli::Register reg("bench", "Measure prefill and decode speed", [](CLI::App& sub) {
    auto o = std::make_shared<BenchOptions>();
    tandem::cli::add_runtime_options(sub, o->rt);
    sub.add_option("-p,--n-prompt", o->n_prompt, "prompt tokens to prefill (0: skip)")
        ->capture_default_str();
    sub.add_option("-n,--n-gen", o->n_gen, "tokens to decode (0: skip)")->capture_default_str();
    sub.add_flag("--json", o->json, "print one JSON object");
    return [o]() -> int {
        if (o->n_prompt < 0 || o->n_gen < 0) throw tandem::Error("bench: -p and -n must be >= 0");
        if (o->rt.ctx > 0 && o->rt.ctx < o->n_prompt + o->n_gen + 1)
            o->rt.ctx = o->n_prompt + o->n_gen + 1;
        auto m = tandem::cli::open_model(o->rt, false);
        auto& e = *m.engine;
        const auto V = static_cast<int32_t>(e.n_vocab());
        std::vector<int32_t> prompt(static_cast<size_t>(std::max(o->n_prompt, 1)));
        for (size_t i = 0; i < prompt.size(); ++i)
            prompt[i] = static_cast<int32_t>((i * 7919 + 13) % size_t(V));
        std::vector<float> logits;
        // Warm-up: pages the weights in and builds the decode graph; the whole prefill once too,
        // as llama-bench does, so neither the prefill kernels' first use (a GPU driver compiling
        // their pipelines: up to half of a timed pp512 on an H200 with a cold shader cache) nor
        // an idle GPU's clocks (the first pp512 after a model was written measured 0.5-0.55 of
        // the next on the H200) are timed.
        e.decode(std::span(prompt).first(1), logits);
        e.decode(std::span(prompt).first(1), logits);
        e.clear();
        if (o->n_prompt > 1) {
            e.decode(prompt, logits);
            e.clear();
        }

        double pp = 0, tg = 0;
        if (o->n_prompt > 0) {
            const double t0 = now_s();
            e.decode(prompt, logits);
            pp = o->n_prompt / (now_s() - t0);
        } else {
            e.decode(std::span(prompt).first(1), logits);
        }
        if (o->n_gen > 0) {
            int32_t id = 1;
            const double t0 = now_s();
            for (int i = 0; i < o->n_gen; ++i) {
                e.decode(std::span<const int32_t>(&id, 1), logits);
                id = static_cast<int32_t>((id * 31 + 7) % V);
            }
            tg = o->n_gen / (now_s() - t0);
        }
        const double bytes = double(e.decode_weight_bytes());
        const double gbs = tg * bytes / 1e9;
        auto& b = e.backend();
        // The device's own copy bandwidth (where the backend measures it): decode's yardstick.
        const double copy_gbs = b.copy_bandwidth() / 1e9;
        if (o->json) {
            nlohmann::ordered_json j = {
                {"model", o->rt.model},
                {"arch", tandem::engine::arch_name(m.model->hp.arch)},
                {"backend", b.device().backend},
                {"device", b.device().name},
                {"threads", o->rt.threads},
                {"n_prompt", o->n_prompt},
                {"n_gen", o->n_gen},
                {"prefill_tok_s", pp},
                {"decode_tok_s", tg},
                {"decode_bytes_per_token", bytes},
                {"decode_gb_s", gbs},
                {"copy_gb_s", copy_gbs},
                {"decode_over_copy", copy_gbs > 0 ? gbs / copy_gbs : 0.0},
                {"weight_bytes", m.model->weight_bytes()},
                {"kv_bytes", b.kv_bytes()},
                {"scratch_bytes", b.scratch_bytes()},
            };
            std::printf("%s\n", j.dump(2).c_str());
        } else {
            std::printf("model    %s (%s, %.2f GiB weights)\n", o->rt.model.c_str(),
                        tandem::engine::arch_name(m.model->hp.arch),
                        double(m.model->weight_bytes()) / (1 << 30));
            std::printf("backend  %s: %s\n", b.device().backend.c_str(), b.device().name.c_str());
            if (o->n_prompt > 0) std::printf("prefill  pp%d  %8.1f tok/s\n", o->n_prompt, pp);
            if (o->n_gen > 0)
                std::printf("decode   tg%d  %8.1f tok/s   %.1f GB/s (%.1f MB read per token)\n",
                            o->n_gen, tg, gbs, bytes / 1e6);
            if (copy_gbs > 0)
                std::printf("memory   copy %.1f GB/s (read + written); decode reaches %.0f%%\n",
                            copy_gbs, 100.0 * gbs / copy_gbs);
        }
        return 0;
    };
});

}  // namespace
