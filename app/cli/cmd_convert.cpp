// tandem-cli convert SRC -o OUT.gguf [--type f32|f16|bf16|q8_0|q4_0|q4_k_m|q5_k_m|q6_k]: a Hugging Face folder or a GGUF file
// to GGUF (design.md section 5).
#include <cstdio>
#include <memory>

#include "command.h"
#include "quantize_progress.h"
#include "tandem/common/error.h"
#include "tandem/hf/convert.h"

namespace {

struct Options {
    std::string src, out, type = "f16", name;
};

tandem::cli::Register reg(
    "convert", "Convert a Hugging Face folder or a GGUF file to GGUF", [](CLI::App& sub) {
        auto o = std::make_shared<Options>();
        sub.add_option("SRC", o->src,
                       "Hugging Face folder (config.json + safetensors) or GGUF file")
            ->required();
        sub.add_option("-o,--output", o->out, "Output GGUF file")->required();
        sub.add_option("--type", o->type,
                       "Type of the weight matrices: f32, f16, bf16, or a quantized file type "
                       "(q8_0, q4_0, q4_k_m, q5_k_m, q6_k: llama.cpp's per-tensor mix)")
            ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m", "q5_k_m",
                                   "q6_k"}, CLI::ignore_case));
        sub.add_option("--name", o->name, "general.name (default: the source folder's name)");
        return [o]() -> int {
            tandem::hf::ConvertOptions opts;
            opts.quant = tandem::hf::quant_scheme_from_name(o->type);
            if (!opts.quant) opts.type = *tandem::dtype_from_name(o->type);
            opts.name = o->name;
            tandem::cli::QuantizeProgressLine line;
            if (opts.quant) opts.progress = [&line](const tandem::hf::QuantizeProgress& p) { line(p); };
            const auto r = tandem::hf::convert(o->src, o->out, opts);
            line.finish();
            std::printf("wrote %s: %s, %zu tensors, %s%s\n", o->out.c_str(), r.arch.c_str(),
                        r.n_tensors, o->type.c_str(), r.vocab_written ? ", with vocabulary" : "");
            if (!r.vocab_written && !r.vocab_note.empty())
                std::printf("note: %s\n", r.vocab_note.c_str());
            return 0;
        };
    });

}  // namespace
