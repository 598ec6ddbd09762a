#include "cluster_options.h"

#include <cstdio>
#include <fstream>

#include "runtime_options.h"
#include "tandem/common/error.h"
#include "tandem/net/cluster_coordinator.h"
#include "tandem/tokenizer/vocab.h"

namespace tandem::cli {

void add_cluster_options(CLI::App& sub, ClusterCliOptions& o) {
    sub.add_option("--cluster", o.nodes,
                   "run tensor-parallel with these tandem-node workers: host:port,host:port");
    sub.add_option("--cluster-secret", o.secret, "shared secret of the workers' --cluster-port");
    sub.add_option("--cluster-secret-file", o.secret_file, "file holding the shared secret");
    sub.add_flag("--cluster-paired", o.paired,
                 "reach the workers over paired, encrypted channels (tandem-node pair)");
    sub.add_option("--cluster-home", o.home, "identity and peers folder for --cluster-paired");
    sub.add_option("--cluster-shares", o.shares,
                   "fixed shares, this process first (default: calibrated speed)");
    sub.add_option("--cluster-wire", o.wire, "all-reduce wire type: f32 or bf16")
        ->check(CLI::IsMember({"f32", "bf16"}))
        ->capture_default_str();
    sub.add_option("--cluster-timeout-ms", o.timeout_ms,
                   "a step fails when a node is silent this long")
        ->capture_default_str();
}

namespace {

std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i <= text.size()) {
        size_t j = text.find(',', i);
        if (j == std::string::npos) j = text.size();
        std::string item = text.substr(i, j - i);
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        if (!item.empty()) out.push_back(item);
        i = j + 1;
    }
    return out;
}

}  // namespace

OpenModel open_cluster_model(const RuntimeOptions& o, bool with_tokenizer) {
    const ClusterCliOptions& c = o.cluster;
    net::ClusterOptions co;
    co.nodes = split_list(c.nodes);
    if (co.nodes.empty()) throw Error("--cluster: no nodes given");
    co.secret = c.secret;
    if (!c.secret_file.empty()) {
        std::ifstream in(c.secret_file);
        if (!in) throw Error("--cluster-secret-file: cannot read " + c.secret_file);
        std::getline(in, co.secret);
    }
    co.paired = c.paired;
    co.home = c.home;
    if (!co.paired && co.secret.empty())
        throw Error(
            "--cluster needs --cluster-secret (or --cluster-secret-file), or "
            "--cluster-paired");
    for (const auto& s : split_list(c.shares)) {
        try {
            co.shares.push_back(std::stod(s));
        } catch (const std::exception&) {
            throw Error("--cluster-shares: '" + s + "' is not a number");
        }
    }
    co.wire = c.wire == "bf16" ? net::WireType::BF16 : net::WireType::F32;
    co.timeout = net::Millis(c.timeout_ms);
    co.backend = o.backend;
    co.device = o.device;
    co.threads = o.threads;
    co.engine.n_ctx = o.ctx;
    co.engine.kv_type = o.kv_type == "f32" ? DType::F32 : DType::F16;
    co.engine.n_batch = o.batch;

    OpenModel r;
    auto file = std::make_shared<gguf::File>(gguf::File::open(o.model));
    r.model = engine::load_model(file, engine::ShardSpec::whole(engine::read_hparams(*file)));
    if (with_tokenizer && file->find("tokenizer.ggml.tokens"))
        r.tok.emplace(tokenizer::load_vocab(*file));
    r.cluster = std::make_shared<net::ClusterCoordinator>(o.model, co);
    std::fputs(r.cluster->describe().c_str(), stderr);
    r.engine = r.cluster->take_engine();
    return r;
}

bool recover_cluster(OpenModel& m) {
    if (!m.cluster || !m.cluster->broken()) return false;
    std::fprintf(stderr, "%s\n", m.cluster->recover().c_str());
    return true;
}

namespace {

class RecoveringGenerator : public server::Generator {
  public:
    RecoveringGenerator(std::unique_ptr<server::Generator> inner, OpenModel& m)
        : inner_(std::move(inner)), m_(m) {}
    std::string model_id() const override { return inner_->model_id(); }
    std::string render_chat(const nlohmann::ordered_json& messages) const override {
        return inner_->render_chat(messages);
    }
    engine::GenerateResult generate(const std::string& prompt, bool add_bos,
                                    const engine::GenerateOptions& options) override {
        // The API server runs one generation at a time, so recovery cannot race a request.
        if (m_.cluster->broken()) recover_cluster(m_);
        try {
            return inner_->generate(prompt, add_bos, options);
        } catch (const Error&) {
            recover_cluster(m_);
            throw;
        }
    }

  private:
    std::unique_ptr<server::Generator> inner_;
    OpenModel& m_;
};

}  // namespace

std::unique_ptr<server::Generator> recovering_generator(std::unique_ptr<server::Generator> inner,
                                                        OpenModel& m) {
    return std::make_unique<RecoveringGenerator>(std::move(inner), m);
}

}  // namespace tandem::cli
