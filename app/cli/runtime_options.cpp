#include "runtime_options.h"

#include "tandem/backend/backend.h"
#include "tandem/backend/registry.h"
#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "tandem/planner/fit.h"
#include "tandem/tokenizer/vocab.h"

namespace tandem::cli {

void add_runtime_options(CLI::App& sub, RuntimeOptions& o) {
    sub.add_option("-m,--model", o.model, "GGUF model file")->required();
    sub.add_option("--backend", o.backend, "cpu, vulkan or hip")->capture_default_str();
    sub.add_option("--device", o.device, "device index within the backend")->capture_default_str();
    sub.add_option("--threads", o.threads, "CPU threads (0: physical cores)")
        ->capture_default_str();
    sub.add_option("--ctx", o.ctx, "context length in tokens (0: the model's)")
        ->capture_default_str();
    sub.add_option("--kv-type", o.kv_type, "KV cache type: f16 or f32")
        ->check(CLI::IsMember({"f16", "f32"}))
        ->capture_default_str();
    sub.add_option("--batch", o.batch, "most tokens per prefill step")->capture_default_str();
    add_cluster_options(sub, o.cluster);
}

const tokenizer::Tokenizer& OpenModel::tokenizer() const {
    if (!tok)
        throw Error(model->file->path().string() +
                    ": the model has no vocabulary (tokenizer.ggml.*)");
    return *tok;
}

namespace {

// A model that does not fit the device is refused before anything is allocated, with the
// planner's message ("does not fit: needs 71.2 GiB on vulkan:0, 64.0 GiB free (...)").
void refuse_if_too_big(const engine::Model& model, const RuntimeOptions& o,
                       const engine::EngineOptions& eo) {
    BackendFactory* f = BackendRegistry::instance().factory(o.backend);
    if (!f) return;  // create_backend says which backends exist
    const auto devs = f->devices();
    if (o.device < 0 || o.device >= static_cast<int>(devs.size())) return;
    planner::FitOptions fo;
    fo.n_ctx = eo.n_ctx > 0 ? eo.n_ctx : model.hp.n_ctx_train;
    fo.n_batch = eo.n_batch;
    fo.kv_type = eo.kv_type;
    planner::fit(model, {planner::budget_of(devs[static_cast<size_t>(o.device)])}, fo);
}

}  // namespace

OpenModel open_model(const RuntimeOptions& o, bool with_tokenizer) {
    if (!o.cluster.nodes.empty()) return open_cluster_model(o, with_tokenizer);
    OpenModel r;
    auto file = std::make_shared<gguf::File>(gguf::File::open(o.model));
    auto hp = engine::read_hparams(*file);
    r.model = engine::load_model(file, engine::ShardSpec::whole(hp));
    if (with_tokenizer && file->find("tokenizer.ggml.tokens"))
        r.tok.emplace(tokenizer::load_vocab(*file));
    BackendOptions bo;
    bo.threads = o.threads;
    engine::EngineOptions eo;
    eo.n_ctx = o.ctx;
    eo.kv_type = o.kv_type == "f32" ? DType::F32 : DType::F16;
    eo.n_batch = o.batch;
    refuse_if_too_big(*r.model, o, eo);
    r.engine =
        std::make_unique<engine::Engine>(r.model, create_backend(o.backend, o.device, bo), eo);
    return r;
}

std::vector<int32_t> parse_ids(const std::string& text) {
    std::vector<int32_t> ids;
    size_t i = 0;
    while (i < text.size()) {
        size_t j = text.find(',', i);
        if (j == std::string::npos) j = text.size();
        std::string item = text.substr(i, j - i);
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        if (!item.empty()) {
            size_t used = 0;
            long long v = 0;
            try {
                v = std::stoll(item, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used != item.size() || v < 0 || v > INT32_MAX)
                throw Error("--ids: '" + item + "' is not a token id");
            ids.push_back(static_cast<int32_t>(v));
        }
        i = j + 1;
    }
    if (ids.empty()) throw Error("--ids: no token ids given");
    return ids;
}

}  // namespace tandem::cli

namespace tandem::cli {
void add_sampling_options(CLI::App& sub, engine::SamplingParams& p) {
    sub.add_option("--temp", p.temperature, "temperature (0: greedy)")->capture_default_str();
    sub.add_option("--top-k", p.top_k, "keep the k most likely tokens (0: off)")
        ->capture_default_str();
    sub.add_option("--top-p", p.top_p, "nucleus sampling mass (1: off)")->capture_default_str();
    sub.add_option("--min-p", p.min_p, "drop tokens below min-p x the best (0: off)")
        ->capture_default_str();
    sub.add_option("--repeat-penalty", p.repeat_penalty, "penalty on recent tokens (1: off)")
        ->capture_default_str();
    sub.add_option("--presence-penalty", p.presence_penalty)->capture_default_str();
    sub.add_option("--seed", p.seed, "random seed")->capture_default_str();
}
}  // namespace tandem::cli
