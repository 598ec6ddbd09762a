// tandem-cli quantize IN OUT --type q4_k_m: an F32/F16/BF16 GGUF (or a Hugging Face folder) to a
// quantized GGUF with llama.cpp's per-tensor type mix.
#include <cstdio>
#include <memory>

#include "command.h"
#include "quantize_progress.h"
#include "tandem/common/error.h"
#include "tandem/hf/convert.h"
#include "tandem/hf/quantize.h"

namespace {

struct Options {
    std::string in, out, type = "q4_k_m", name;
    int threads = 0;
};

tandem::cli::Register reg(
    "quantize", "Quantize a GGUF file (F32/F16/BF16) or a Hugging Face folder", [](CLI::App& sub) {
        auto o = std::make_shared<Options>();
        sub.add_option("IN", o->in, "GGUF file, or Hugging Face folder (config.json + safetensors)")
            ->required();
        sub.add_option("OUT", o->out, "Output GGUF file")->required();
        sub.add_option("--type", o->type, "q8_0, q4_0, q4_k_m, q5_k_m or q6_k")
            ->capture_default_str();
        sub.add_option("-t,--threads", o->threads, "Threads (0: all hardware threads)");
        sub.add_option("--name", o->name, "general.name of the output");
        return [o]() -> int {
            using namespace tandem;
            const auto scheme = hf::quant_scheme_from_name(o->type);
            if (!scheme)
                throw Error("quantize: unknown --type '" + o->type + "' (one of " +
                            hf::quant_scheme_names() + ")");
            cli::QuantizeProgressLine line;
            hf::QuantizeResult r;
            if (std::filesystem::is_directory(o->in)) {
                hf::ConvertOptions co;
                co.quant = scheme;
                co.threads = o->threads;
                co.name = o->name;
                co.progress = [&line](const hf::QuantizeProgress& p) { line(p); };
                hf::convert_hf(o->in, o->out, co);
                const double secs = line.finish();
                std::printf("wrote %s (%s from a Hugging Face folder, %.1f s)\n", o->out.c_str(),
                            std::string(hf::quant_scheme_name(*scheme)).c_str(), secs);
                return 0;
            }
            hf::QuantizeOptions qo;
            qo.scheme = *scheme;
            qo.threads = o->threads;
            qo.name = o->name;
            qo.progress = [&line](const hf::QuantizeProgress& p) { line(p); };
            r = hf::quantize_gguf(o->in, o->out, qo);
            const double secs = line.finish();
            std::printf("wrote %s\n", o->out.c_str());
            cli::print_quantize_summary(r, *scheme, secs);
            return 0;
        };
    });

}  // namespace
