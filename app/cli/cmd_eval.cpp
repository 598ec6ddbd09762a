// tandem-cli eval: logits of every position of a token sequence, as float32 little-endian
// [n_ids, n_vocab] (the contract tests and reference comparisons use).
#include <cstdio>
#include <fstream>

#include "command.h"
#include "runtime_options.h"
#include "tandem/common/error.h"

namespace {

struct EvalOptions {
    tandem::cli::RuntimeOptions rt;
    std::string ids;
    std::string out;
};

tandem::cli::Register reg(
    "eval", "Write the logits of every position of a token sequence", [](CLI::App& sub) {
        auto o = std::make_shared<EvalOptions>();
        tandem::cli::add_runtime_options(sub, o->rt);
        sub.add_option("--ids", o->ids, "token ids, comma separated")->required();
        sub.add_option("--logits-out", o->out, "output file: float32 LE [n_ids, n_vocab]")
            ->required();
        return [o]() -> int {
            auto ids = tandem::cli::parse_ids(o->ids);
            auto m = tandem::cli::open_model(o->rt, false);
            std::vector<float> logits;
            m.engine->decode(ids, logits, true);
            std::ofstream f(o->out, std::ios::binary | std::ios::trunc);
            f.write(reinterpret_cast<const char*>(logits.data()),
                    static_cast<std::streamsize>(logits.size() * sizeof(float)));
            if (!f) throw tandem::Error("eval: cannot write " + o->out);
            std::printf("%zu x %lld logits -> %s\n", ids.size(),
                        static_cast<long long>(m.engine->n_vocab()), o->out.c_str());
            return 0;
        };
    });

}  // namespace
