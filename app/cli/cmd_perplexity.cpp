// tandem-cli perplexity: perplexity of a text file, chunked and scored as llama.cpp's
// llama-perplexity does (engine/perplexity.h), so the two tools' numbers compare directly.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "command.h"
#include "runtime_options.h"
#include "tandem/common/error.h"
#include "tandem/engine/perplexity.h"

namespace {

struct PerplexityCmd {
    tandem::cli::RuntimeOptions rt;
    std::string file;
    int64_t chunks = 0;
    bool json = false;
};

std::string read_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw tandem::Error("perplexity: cannot open " + path);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

tandem::cli::Register reg(
    "perplexity", "Perplexity of a text file (chunks of --ctx tokens, as llama-perplexity)",
    [](CLI::App& sub) {
        auto o = std::make_shared<PerplexityCmd>();
        o->rt.ctx = 512;
        tandem::cli::add_runtime_options(sub, o->rt);
        sub.add_option("-f,--file", o->file, "text file to score")->required();
        sub.add_option("--chunks", o->chunks, "score at most this many chunks (0: all)")
            ->capture_default_str();
        sub.add_flag("--json", o->json, "print one JSON object");
        return [o]() -> int {
            if (o->rt.ctx <= 0) throw tandem::Error("perplexity: --ctx must be > 0 (chunk size)");
            const std::string text = read_text(o->file);
            auto m = tandem::cli::open_model(o->rt, true);
            const auto& tok = m.tokenizer();
            const auto ids = tok.encode(text, true, false);
            tandem::engine::PerplexityOptions po;
            po.n_ctx = o->rt.ctx;
            po.max_chunks = o->chunks;
            po.bos_id = tok.vocab().add_bos ? tok.vocab().bos_id : -1;
            auto r = tandem::engine::perplexity(*m.engine, ids, po, [&](int64_t c, double ppl) {
                if (!o->json)
                    std::fprintf(stderr, "[%lld] %.4f\n", static_cast<long long>(c + 1), ppl);
            });
            if (o->json) {
                nlohmann::ordered_json j = {
                    {"model", o->rt.model},       {"file", o->file},
                    {"n_tokens", ids.size()},     {"n_ctx", po.n_ctx},
                    {"n_chunks", r.n_chunks},     {"n_scored", r.n_scored},
                    {"perplexity", r.perplexity}, {"nll_mean", r.nll_mean},
                    {"nll_stderr", r.nll_stderr}, {"by_chunk", r.by_chunk},
                };
                std::printf("%s\n", j.dump(2).c_str());
            } else {
                std::printf("%zu tokens, %lld chunks of %lld, %lld scored\n", ids.size(),
                            static_cast<long long>(r.n_chunks), static_cast<long long>(po.n_ctx),
                            static_cast<long long>(r.n_scored));
                std::printf("perplexity: %.4f +/- %.5f\n", r.perplexity,
                            r.nll_stderr * r.perplexity);
            }
            return 0;
        };
    });

}  // namespace
