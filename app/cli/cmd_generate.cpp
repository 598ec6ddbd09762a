// tandem-cli generate: continue a token sequence or a raw text prompt (no chat template).
// With --print-ids the last line of stdout is the generated ids.
#include <cstdio>

#include "command.h"
#include "runtime_options.h"
#include "tandem/common/error.h"
#include "tandem/engine/generate.h"

namespace {

struct GenerateCmd {
    tandem::cli::RuntimeOptions rt;
    tandem::engine::SamplingParams sampling;
    std::string ids, prompt;
    int n = 32;
    bool print_ids = false;
    bool ignore_eos = false;
};

tandem::cli::Register reg(
    "generate", "Continue a prompt (token ids or raw text)", [](CLI::App& sub) {
        auto o = std::make_shared<GenerateCmd>();
        tandem::cli::add_runtime_options(sub, o->rt);
        tandem::cli::add_sampling_options(sub, o->sampling);
        auto* ids = sub.add_option("--ids", o->ids, "prompt token ids, comma separated");
        auto* p = sub.add_option("-p,--prompt", o->prompt,
                                 "prompt text (tokenized with the model's vocabulary)");
        ids->excludes(p);
        sub.add_option("-n,--n-predict", o->n, "tokens to generate")->capture_default_str();
        sub.add_flag("--print-ids", o->print_ids, "print the generated ids as the last line");
        sub.add_flag("--ignore-eos", o->ignore_eos, "do not stop at end-of-generation tokens");
        return [o]() -> int {
            if (o->ids.empty() && o->prompt.empty())
                throw tandem::Error("generate: give --ids or -p");
            auto m = tandem::cli::open_model(o->rt, true);
            const tandem::tokenizer::Tokenizer* tok = m.tok ? &*m.tok : nullptr;
            std::vector<int32_t> prompt = !o->ids.empty()
                                              ? tandem::cli::parse_ids(o->ids)
                                              : m.tokenizer().encode(o->prompt, true, true);
            tandem::engine::GenerateOptions g;
            g.max_tokens = o->n;
            g.sampling = o->sampling;
            g.stop_at_eog = !o->ignore_eos;
            if (tok && !o->print_ids) {
                std::fputs(o->prompt.c_str(), stdout);
                g.on_text = [](std::string_view t) {
                    std::fwrite(t.data(), 1, t.size(), stdout);
                    std::fflush(stdout);
                    return true;
                };
            }
            auto r = tandem::engine::generate(*m.engine, prompt, tok, g);
            if (o->print_ids) {
                if (tok) std::printf("%s\n", r.text.c_str());
                std::string line;
                for (size_t i = 0; i < r.ids.size(); ++i)
                    line += (i ? " " : "") + std::to_string(r.ids[i]);
                std::printf("%s\n", line.c_str());
            } else {
                std::printf("\n");
            }
            std::fprintf(
                stderr,
                "prompt %lld tokens in %.3f s (%.1f tok/s), generated %zu tokens, %.1f tok/s, "
                "stop: %s\n",
                static_cast<long long>(r.n_prompt), r.prefill_seconds,
                r.prefill_seconds > 0 ? double(r.n_prompt - r.n_reused) / r.prefill_seconds : 0.0,
                r.ids.size(), r.decode_seconds > 0 ? double(r.n_decoded) / r.decode_seconds : 0.0,
                tandem::engine::stop_reason_name(r.stop));
            return 0;
        };
    });

}  // namespace
