// Coordinator of cluster mode: see cluster_coordinator.h.
#include "tandem/net/cluster_coordinator.h"

#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "calibration.h"
#include "model_files.h"
#include "protocol.h"
#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "tandem/net/channel.h"
#include "tandem/net/identity.h"
#include "tandem/net/peer_store.h"
#include "tandem/planner/fit.h"
#include "tandem/planner/memory_plan.h"
#include "tandem/planner/shard_loader.h"
#include "tandem/planner/shard_shape.h"
#include "timed_transport.h"

namespace tandem::net {

using namespace cluster;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

struct ClusterCoordinator::Worker {
    std::string address;               // as given (host:port, or node-id@host:port)
    std::string node_id;               // paired mode
    std::unique_ptr<Transport> owned;  // until the collective takes it
    Transport* control = nullptr;      // stays valid while the collective lives
    NodeInfo info;
};

// The engine's Collective: the group's TransportCollective, turning a failure into a broken
// cluster with an error naming the node, and counting finished graphs for the heartbeat.
class ClusterCoordinator::StepCollective : public Collective {
  public:
    StepCollective(ClusterCoordinator& c, std::vector<std::unique_ptr<Transport>> links,
                   CollectiveOptions o)
        : c_(c), inner_(0, std::move(links), o) {}
    int rank() const override { return 0; }
    int n_ranks() const override { return inner_.n_ranks(); }
    void all_reduce_sum(float* data, size_t n) override {
        busy_.resize(c_.timed_.size());
        for (size_t k = 0; k < busy_.size(); ++k)
            busy_[k] = c_.timed_[k] ? c_.timed_[k]->busy_ns() : 0;
        const int64_t t0 = cluster::TimedTransport::now_ns();
        try {
            inner_.all_reduce_sum(data, n);
        } catch (const std::exception& e) {
            c_.fail_step(e.what());
        }
        c_.note_all_reduce(t0, cluster::TimedTransport::now_ns(), busy_);
    }
    void all_gather(const float* local, size_t n, std::vector<float>& all,
                    std::vector<size_t>& sizes) override {
        try {
            inner_.all_gather(local, n, all, sizes);
        } catch (const std::exception& e) {
            c_.fail_step(e.what());
        }
        // The logits gather ends every step graph.
        c_.note_step_end(cluster::TimedTransport::now_ns());
        std::lock_guard lock(c_.mu_);
        if (c_.pending_steps_ > 0) --c_.pending_steps_;
    }
    void close() { inner_.close(); }

  private:
    ClusterCoordinator& c_;
    TransportCollective inner_;
    std::vector<int64_t> busy_;  // per rank, before the current all-reduce
};

namespace {

constexpr Millis kSendTimeout{5000};
constexpr size_t kChunk = size_t(4) << 20;

std::string gbps(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", v);
    return b;
}

std::string shard_text(const engine::ShardSpec& s, const engine::HParams& hp) {
    auto range = [](int64_t b, int64_t e) {
        return "[" + std::to_string(b) + "," + std::to_string(e) + ")";
    };
    std::string t = "q heads " + range(s.q_begin(hp), s.q_end(hp)) + " kv " +
                    range(s.kv_head_begin, s.kv_head_end);
    if (hp.n_expert > 0)
        t += " experts " + range(s.expert_begin, s.expert_end);
    else
        t += " ffn " + range(s.ff_begin, s.ff_end);
    return t + " vocab " + range(s.vocab_begin, s.vocab_end);
}

// FFN columns per shard come in whole blocks of the weights' quant type (at least 32 columns).
int64_t ff_align_of(const engine::Model& m) {
    int64_t a = 32;
    for (const auto& l : m.layers)
        if (l.ffn_down.present())
            a = std::max<int64_t>(a, dtype_traits(l.ffn_down.type).block_elems);
    return a;
}

void stream_shard(Transport& t, const fs::path& model, const engine::ShardSpec& shard) {
    const int fd = ::open(model.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(model.string() + ": cannot open: " + std::strerror(errno));
    std::vector<uint8_t> msg;
    try {
        for (const ShardRange& r : shard_file_ranges(model, shard)) {
            for (uint64_t done = 0; done < r.size;) {
                const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, r.size - done));
                WireWriter w;
                w.u8(static_cast<uint8_t>(Msg::ShardChunk));
                w.u64(r.offset + done);
                msg = w.take();
                msg.resize(msg.size() + n);
                const ssize_t got =
                    ::pread(fd, msg.data() + 9, n, static_cast<off_t>(r.offset + done));
                if (got != static_cast<ssize_t>(n))
                    throw Error(model.string() + ": short read while streaming a shard");
                t.send(msg, Millis(60000));
                done += n;
            }
        }
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
    t.send(encode_empty(Msg::ShardEnd), kSendTimeout);
}

}  // namespace

ClusterCoordinator::ClusterCoordinator(fs::path model, ClusterOptions options)
    : model_path_(std::move(model)), opts_(std::move(options)) {
    if (sodium_init() < 0) throw Error("libsodium failed to initialise");
    if (opts_.nodes.empty()) throw Error("cluster: no nodes given");
    connect_all(opts_.nodes);
    if (opts_.heartbeat.count() > 0) heartbeat_ = std::thread([this] { heartbeat_loop(); });
}

ClusterCoordinator::~ClusterCoordinator() {
    stop_ = true;
    cv_.notify_all();
    if (heartbeat_.joinable()) heartbeat_.join();
    teardown();
}

std::unique_ptr<engine::Engine> ClusterCoordinator::take_engine() {
    if (!owned_engine_) throw Error("cluster: the engine was already taken");
    return std::move(owned_engine_);
}

std::string ClusterCoordinator::broken_reason() const {
    std::lock_guard lock(mu_);
    return broken_reason_;
}

std::string ClusterCoordinator::describe() const {
    std::string s;
    for (size_t r = 0; r < reports_.size(); ++r) {
        const auto& n = reports_[r];
        s += "rank " + std::to_string(r) + " " + n.address + " (" + n.name + ", " + n.backend +
             " " + n.device + ", matvec " + gbps(n.matvec_gbps) + " GB/s, share " + gbps(n.share) +
             "): " + n.shard + (n.source.empty() ? "" : ", shard from " + n.source) + "\n";
    }
    return s;
}

void ClusterCoordinator::connect_all(const std::vector<std::string>& nodes) {
    const std::string fingerprint = model_fingerprint(model_path_);
    auto whole = engine::load_model(model_path_);  // mapping only: the tensor table and shapes
    const engine::HParams& hp = whole->hp;

    std::optional<Identity> identity;
    std::optional<PeerStore> peers;
    if (opts_.paired) {
        const fs::path home = opts_.home.empty() ? default_home() : opts_.home;
        identity.emplace(Identity::load_or_create(home));
        peers.emplace(home / "peers.json");
    }

    std::vector<std::unique_ptr<Worker>> workers;
    for (const std::string& spec : nodes) {
        auto w = std::make_unique<Worker>();
        w->address = spec;
        std::string where = spec;
        try {
            if (opts_.paired) {
                // "node-id@host:port", or host:port of a paired node (its last known address).
                std::optional<PairedPeer> peer;
                if (auto at = spec.find('@'); at != std::string::npos) {
                    peer = peers->find(spec.substr(0, at));
                    where = spec.substr(at + 1);
                } else {
                    for (const auto& p : peers->list())
                        if (p.address == spec) peer = p;
                }
                if (!peer) throw Error("not a paired node (pair it first: tandem-node pair)");
                w->node_id = peer->node_id;
                w->owned = make_channel_transport(
                    SecureChannel::connect(parse_host_port(where, 47401), *identity, *peer));
            } else {
                w->owned = make_tcp_transport(
                    Socket::connect(parse_host_port(where, 47402), Millis(3000)));
            }
            w->address = where;
            Hello h;
            h.kind = HelloKind::Coordinator;
            h.secret = opts_.secret;
            w->owned->send(encode(h), kSendTimeout);
            std::vector<uint8_t> msg;
            w->owned->recv(msg, Millis(5000));
            if (type_of(msg) == Msg::Failed) throw Error("refused: " + decode_failed(msg));
            w->info = decode_info(msg);
        } catch (const std::exception& e) {
            throw Error("cluster: node " + spec + ": " + e.what());
        }
        w->control = w->owned.get();
        workers.push_back(std::move(w));
    }

    // Shares: given, or proportional to calibrated speed; then the memory check of every node.
    const int n = static_cast<int>(workers.size()) + 1;
    const NodeInfo local = describe_node("", opts_.backend, opts_.device, opts_.threads);
    std::vector<double> shares = opts_.shares;
    if (shares.empty()) {
        shares.push_back(local.matvec_gbps);
        for (const auto& w : workers) shares.push_back(std::max(w->info.matvec_gbps, 1e-3));
    }
    if (static_cast<int>(shares.size()) != n)
        throw Error("cluster: " + std::to_string(shares.size()) + " shares for " +
                    std::to_string(n) + " ranks");
    const int64_t align = ff_align_of(*whole);
    planner::PlanOptions po;
    po.n_ctx = opts_.engine.n_ctx > 0 ? opts_.engine.n_ctx : hp.n_ctx_train;
    po.n_batch = opts_.engine.n_batch;
    po.kv_type = opts_.engine.kv_type;
    po.all_logits = true;
    std::vector<planner::DeviceBudget> budgets;
    budgets.push_back({"local", local.memory_free, 0});
    for (const auto& w : workers) budgets.push_back({"node " + w->address, w->info.memory_free, 0});
    bool fits = true;
    for (int r = 0; r < n && fits; ++r) {
        const auto plan =
            planner::plan_device(*whole, planner::shard_by_shares(hp, r, shares, align), po, 0);
        fits = plan.total() <= planner::usable_bytes(budgets[size_t(r)], 0.05);
    }
    if (!fits && opts_.shares.empty()) {
        planner::FitOptions fo;
        fo.n_ctx = po.n_ctx;
        fo.n_batch = po.n_batch;
        fo.kv_type = po.kv_type;
        fo.ff_align = align;
        fo.all_logits = true;
        shares = planner::fit(*whole, budgets, fo).shares;  // throws naming the short node
        log_info("cluster: shares by speed do not fit every node's memory; using the fit's");
    }

    // Assign, stream shards to nodes without the file, wait for every node to be ready.
    uint64_t session = 0;
    randombytes_buf(&session, sizeof session);
    Assignment a;
    a.session = session;
    a.model_name = model_path_.filename().string();
    a.fingerprint = fingerprint;
    a.model_size = whole->file->file_size();
    a.n_ctx = opts_.engine.n_ctx;
    a.n_batch = opts_.engine.n_batch;
    a.kv_f32 = opts_.engine.kv_type == DType::F32;
    a.wire_bf16 = opts_.wire == WireType::BF16;
    a.timeout_ms =
        static_cast<uint32_t>(opts_.timeout.count() * 2);  // the coordinator reports first
    a.sim_delay_us = static_cast<uint32_t>(opts_.simulated_delay.count());
    a.addresses.push_back("");
    a.node_ids.push_back("");
    for (const auto& w : workers) {
        a.addresses.push_back(w->address);
        a.node_ids.push_back(w->node_id);
    }
    std::vector<ClusterNodeReport> reports(static_cast<size_t>(n));
    std::vector<uint8_t> msg;
    for (int r = 1; r < n; ++r) {
        Worker& w = *workers[size_t(r - 1)];
        a.shard = planner::shard_by_shares(hp, r, shares, align);
        w.control->send(encode(a), kSendTimeout);
    }
    // Rank 0 loads its own shard now, while the nodes load theirs: loading it after every node
    // reported ready left them idle past their silence limit on a 70B model (20 GB a rank).
    const auto t0 = clock_type::now();
    auto model0 = planner::load_shard(model_path_, planner::shard_by_shares(hp, 0, shares, align));
    BackendOptions bo;
    bo.threads = opts_.threads;
    engine::Engine e(model0, create_backend(opts_.backend, opts_.device, bo), opts_.engine);
    for (int r = 1; r < n; ++r) {
        Worker& w = *workers[size_t(r - 1)];
        const auto shard = planner::shard_by_shares(hp, r, shares, align);
        try {
            // A node first hashes its copy of the file (about 1 GB/s) before it answers, so
            // a 40 GB model needs far more than a fixed half minute; allow 200 MB/s.
            w.control->recv(msg, Millis(30000 + int64_t(a.model_size / 200'000)));
            if (type_of(msg) == Msg::Failed) throw Error("refused: " + decode_failed(msg));
            if (decode_need_shard(msg)) {
                log_info("cluster: streaming shard " + std::to_string(r) + " to " + w.address);
                stream_shard(*w.control, model_path_, shard);
            }
        } catch (const std::exception& e) {
            throw Error("cluster: node " + w.address + ": " + e.what());
        }
    }
    for (int r = 1; r < n; ++r) {
        Worker& w = *workers[size_t(r - 1)];
        auto& rep = reports[size_t(r)];
        try {
            w.control->recv(msg, Millis(300000));
            if (type_of(msg) == Msg::Failed) throw Error("refused: " + decode_failed(msg));
            const Ready ready = decode_ready(msg);
            rep.source = ready.source;
            rep.load_seconds = ready.load_seconds;
        } catch (const std::exception& e) {
            throw Error("cluster: node " + w.address + ": " + e.what());
        }
    }
    double total = 0;
    for (double s : shares) total += s;
    for (int r = 0; r < n; ++r) {
        auto& rep = reports[size_t(r)];
        const NodeInfo& info = r == 0 ? local : workers[size_t(r - 1)]->info;
        rep.address = r == 0 ? "local" : workers[size_t(r - 1)]->address;
        rep.name = info.name;
        rep.backend = info.backend;
        rep.device = info.device;
        rep.matvec_gbps = info.matvec_gbps;
        rep.memory_free = info.memory_free;
        rep.share = shares[size_t(r)] / total;
        rep.shard = shard_text(planner::shard_by_shares(hp, r, shares, align), hp);
    }

    // Rank 0 drives the group with the shard it loaded while the nodes loaded theirs.
    std::vector<std::unique_ptr<Transport>> links(static_cast<size_t>(n));
    std::vector<cluster::TimedTransport*> timed(static_cast<size_t>(n), nullptr);
    for (int r = 1; r < n; ++r) {
        links[size_t(r)] = std::move(workers[size_t(r - 1)]->owned);
        if (opts_.simulated_delay.count() > 0)
            links[size_t(r)] =
                make_delay_transport(std::move(links[size_t(r)]), opts_.simulated_delay);
        auto t = std::make_unique<cluster::TimedTransport>(std::move(links[size_t(r)]));
        timed[size_t(r)] = t.get();
        links[size_t(r)] = std::move(t);
    }
    CollectiveOptions co;
    co.wire = opts_.wire;
    co.timeout = opts_.timeout;
    auto collective = std::make_unique<StepCollective>(*this, std::move(links), co);
    e.set_collective(collective.get());
    e.set_step_listener(this);
    reports[0].source = "local file";
    reports[0].load_seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
    {
        std::lock_guard lock(mu_);
        if (engine_)
            *engine_ = std::move(e);
        else {
            owned_engine_ = std::make_unique<engine::Engine>(std::move(e));
            engine_ = owned_engine_.get();
        }
        collective_ = std::move(collective);
        timed_ = std::move(timed);
        workers_ = std::move(workers);
        reports_ = std::move(reports);
        clustered_ = true;
        broken_ = false;
        broken_reason_.clear();
        pending_steps_ = 0;
    }
    {
        std::lock_guard lock(health_mu_);
        step_ms_.assign(size_t(n), 0.0);
        all_reduce_us_.assign(size_t(n), 0.0);
        steps_ = all_reduces_ = 0;
    }
    log_info("cluster: " + std::to_string(n) + " ranks ready\n" + describe());
}

void ClusterCoordinator::teardown() {
    std::lock_guard lock(mu_);
    if (!broken_)
        for (auto& w : workers_) try {
                w->control->send(encode_empty(Msg::End), Millis(500));
            } catch (const std::exception&) {
            }
    if (collective_) collective_->close();
    clustered_ = false;
}

void ClusterCoordinator::build_local() {
    BackendOptions bo;
    bo.threads = opts_.threads;
    auto whole = engine::load_model(model_path_);
    engine::Engine e(whole, create_backend(opts_.backend, opts_.device, bo), opts_.engine);
    std::lock_guard lock(mu_);
    *engine_ = std::move(e);
    reports_ = {ClusterNodeReport{"local", "", opts_.backend, "", 0, 0, 1.0, "whole model",
                                  "local file", 0}};
}

std::string ClusterCoordinator::recover() {
    const std::string why = broken_reason();
    // Nodes that still accept a connection (a dead process refuses at once).
    std::vector<std::string> alive;
    for (const auto& w : workers_) {
        try {
            Socket::connect(parse_host_port(w->address, 47402), Millis(300));
            alive.push_back(w->node_id.empty() ? w->address : w->node_id + "@" + w->address);
        } catch (const std::exception&) {
        }
    }
    teardown();
    std::string line;
    opts_.shares.clear();  // fixed shares were for the old group: calibrate the new one
    if (!alive.empty()) {
        try {
            connect_all(alive);
            line = "cluster: re-planned on " + std::to_string(alive.size() + 1) +
                   " ranks after: " + why;
        } catch (const std::exception& e) {
            log_warn(std::string("cluster: re-plan failed: ") + e.what());
        }
    }
    if (line.empty()) {
        {
            std::lock_guard lock(mu_);
            workers_.clear();
        }
        build_local();
        {
            std::lock_guard lock(mu_);
            collective_.reset();
            timed_.clear();
            broken_ = false;
        }
        {
            std::lock_guard lock(health_mu_);
            step_ms_.assign(1, 0.0);
            all_reduce_us_.assign(1, 0.0);
            steps_ = all_reduces_ = 0;
        }
        line = "cluster: running the whole model locally after: " + why;
    }
    log_warn(line);
    return line;
}

void ClusterCoordinator::on_decode(int64_t n_past, std::span<const int32_t> ids, bool all_logits) {
    std::unique_lock lock(mu_);
    if (!clustered_) return;
    if (broken_)
        throw Error("cluster is broken (" + broken_reason_ + "); recover() before the next step");
    const int64_t batch = std::max<int64_t>(1, std::min(opts_.engine.n_batch, engine_->n_ctx()));
    pending_steps_ += static_cast<int>((static_cast<int64_t>(ids.size()) + batch - 1) / batch);
    const auto step = encode_step(n_past, ids, all_logits);
    step_start_ns_ = cluster::TimedTransport::now_ns();
    for (auto& w : workers_) {
        try {
            w->control->send(step, opts_.timeout);
        } catch (const std::exception& e) {
            lock.unlock();
            fail_step("sending a step to " + w->address + ": " + e.what());
        }
    }
}

std::string ClusterCoordinator::diagnose(const std::string& error) {
    std::string down;
    for (size_t k = 0; k < workers_.size(); ++k) {
        try {
            Socket::connect(parse_host_port(workers_[k]->address, 47402), Millis(300));
        } catch (const std::exception& e) {
            down += (down.empty() ? "" : "; ") + std::string("node ") + workers_[k]->address +
                    " (rank " + std::to_string(k + 1) + ") is down: " + e.what();
        }
    }
    // Name the rank's node when the error names a rank.
    std::string named = error;
    for (size_t k = 0; k < workers_.size(); ++k) {
        const std::string tag = "rank " + std::to_string(k + 1) + " (";
        if (auto p = named.find(tag); p != std::string::npos) {
            named.insert(p, "node " + workers_[k]->address + ", ");
            break;
        }
    }
    return down.empty() ? named : down + " (" + named + ")";
}

void ClusterCoordinator::fail_step(const std::string& what) {
    const std::string reason = diagnose(what);
    {
        std::lock_guard lock(mu_);
        broken_ = true;
        broken_reason_ = reason;
        pending_steps_ = 0;
    }
    throw Error("cluster step failed: " + reason);
}

namespace {

// Recent mean: the newest sample weighs 1/4 (the first one sets the value).
void blend(double& avg, double sample, uint64_t count) {
    avg = count == 0 ? sample : avg + 0.25 * (sample - avg);
}

}  // namespace

void ClusterCoordinator::note_all_reduce(int64_t t0_ns, int64_t t1_ns,
                                         const std::vector<int64_t>& busy_before) {
    std::lock_guard lock(health_mu_);
    if (all_reduce_us_.size() != timed_.size() || timed_.empty()) return;
    blend(all_reduce_us_[0], double(t1_ns - t0_ns) / 1e3, all_reduces_);
    for (size_t k = 1; k < timed_.size() && k < busy_before.size(); ++k)
        if (timed_[k])
            blend(all_reduce_us_[k], double(timed_[k]->busy_ns() - busy_before[k]) / 1e3,
                  all_reduces_);
    ++all_reduces_;
}

void ClusterCoordinator::note_step_end(int64_t t_ns) {
    std::lock_guard lock(health_mu_);
    if (step_ms_.size() != timed_.size() || timed_.empty() || step_start_ns_ == 0) return;
    blend(step_ms_[0], double(t_ns - step_start_ns_) / 1e6, steps_);
    for (size_t k = 1; k < timed_.size(); ++k)
        if (timed_[k])
            blend(step_ms_[k],
                  double(std::max<int64_t>(0, timed_[k]->last_recv_ns() - step_start_ns_)) / 1e6,
                  steps_);
    ++steps_;
    step_start_ns_ = t_ns;  // the next graph of the same decode() starts now
}

ClusterHealth ClusterCoordinator::health() const {
    ClusterHealth h;
    std::vector<ClusterNodeReport> reports;
    {
        std::lock_guard lock(mu_);
        h.clustered = clustered_;
        h.broken = broken_;
        reports = reports_;
    }
    std::lock_guard lock(health_mu_);
    h.steps = steps_;
    h.all_reduces = all_reduces_;
    for (size_t r = 0; r < reports.size(); ++r) {
        ClusterRankHealth rh;
        rh.address = reports[r].address;
        rh.name = reports[r].name;
        rh.share = reports[r].share;
        if (r < step_ms_.size()) rh.step_ms = step_ms_[r];
        if (r < all_reduce_us_.size()) rh.all_reduce_us = all_reduce_us_[r];
        h.ranks.push_back(std::move(rh));
    }
    return h;
}

void ClusterCoordinator::heartbeat_loop() {
    std::vector<uint8_t> msg;
    std::unique_lock lock(mu_);
    while (!stop_) {
        cv_.wait_for(lock, opts_.heartbeat, [&] { return stop_.load(); });
        if (stop_ || broken_ || !clustered_ || pending_steps_ > 0) continue;
        for (size_t k = 0; k < workers_.size(); ++k) {
            try {
                workers_[k]->control->send(encode_empty(Msg::Ping), opts_.timeout);
                workers_[k]->control->recv(msg, opts_.timeout);
                if (type_of(msg) != Msg::Pong)
                    throw Error(std::string("answered a ping with ") + msg_name(type_of(msg)));
            } catch (const std::exception& e) {
                broken_ = true;
                broken_reason_ = "heartbeat: node " + workers_[k]->address + " (rank " +
                                 std::to_string(k + 1) + ") did not answer: " + e.what();
                log_warn("cluster: " + broken_reason_);
                break;
            }
        }
    }
}

}  // namespace tandem::net
