// Worker side of cluster mode: see cluster_worker.h. One session per coordinator connection;
// links from other workers wait in a mailbox keyed by (session, rank) until their session
// takes them.
#include "tandem/net/cluster_worker.h"

#include <sodium.h>

#include <chrono>

#include "borrowed_transport.h"
#include "calibration.h"
#include "model_files.h"
#include "protocol.h"
#include "tandem/common/error.h"
#include "tandem/common/log.h"
#include "tandem/engine/engine.h"
#include "tandem/net/channel.h"
#include "tandem/net/collective_group.h"
#include "tandem/net/identity.h"
#include "tandem/net/node_service.h"
#include "tandem/net/peer_store.h"
#include "tandem/planner/shard_loader.h"

namespace tandem::net {

using namespace cluster;
namespace fs = std::filesystem;

struct ClusterWorker::PeerLink {
    Transport* transport = nullptr;
    bool taken = false, done = false;
};

namespace {

constexpr Millis kSendTimeout{5000};
constexpr Millis kPeerTimeout{30000};  // other workers may still be loading their shards

bool secret_matches(const std::string& want, const std::string& got) {
    return want.size() == got.size() && sodium_memcmp(want.data(), got.data(), want.size()) == 0;
}

std::string describe_shard(const engine::ShardSpec& s, const engine::HParams& hp) {
    return "rank " + std::to_string(s.rank) + "/" + std::to_string(s.n_ranks) + ": q heads [" +
           std::to_string(s.q_begin(hp)) + "," + std::to_string(s.q_end(hp)) + "), kv [" +
           std::to_string(s.kv_head_begin) + "," + std::to_string(s.kv_head_end) + "), ffn [" +
           std::to_string(s.ff_begin) + "," + std::to_string(s.ff_end) + "), experts [" +
           std::to_string(s.expert_begin) + "," + std::to_string(s.expert_end) + "), vocab [" +
           std::to_string(s.vocab_begin) + "," + std::to_string(s.vocab_end) + ")";
}

// Receives the shard stream (header, chunks, end) into the cache.
fs::path receive_shard(Transport& control, const fs::path& path, uint64_t file_size) {
    ShardCacheWriter out(path, file_size);
    std::vector<uint8_t> msg;
    for (;;) {
        control.recv(msg, Millis(60000));
        const Msg m = type_of(msg);
        if (m == Msg::ShardEnd) break;
        if (m != Msg::ShardChunk)
            throw Error(std::string("cluster: expected shard data, got ") + msg_name(m));
        WireReader r(msg, "cluster shard chunk");
        r.u8("type");
        const uint64_t off = r.u64("offset");
        const auto bytes = r.take(r.remaining(), "bytes");
        out.write(off, bytes.data(), bytes.size());
    }
    out.commit();
    return path;
}

}  // namespace

ClusterWorker::ClusterWorker(WorkerOptions options) : opts_(std::move(options)) {
    if (sodium_init() < 0) throw Error("libsodium failed to initialise");
    if (opts_.cache_dir.empty()) opts_.cache_dir = fs::temp_directory_path() / "tandem-shards";
    const NodeInfo info = describe_node(opts_.name, opts_.backend, opts_.device, opts_.threads);
    log_info("cluster node: " + info.backend + " '" + info.device + "', matvec " +
             std::to_string(info.matvec_gbps).substr(0, 5) + " GB/s, " +
             std::to_string(info.memory_free >> 20) + " MiB free");
    const auto bytes = encode(info);
    info_.assign(bytes.begin(), bytes.end());
}

ClusterWorker::~ClusterWorker() {
    stop();
}

void ClusterWorker::stop() {
    stop_ = true;
    cv_.notify_all();
    if (accept_thread_.joinable()) accept_thread_.join();
    for (auto& t : conn_threads_)
        if (t.joinable()) t.join();
    conn_threads_.clear();
}

void ClusterWorker::start_tcp(Listener& listener) {
    accept_thread_ = std::thread([this, &listener] { accept_loop(&listener); });
}

void ClusterWorker::accept_loop(Listener* listener) {
    while (!stop_) {
        Socket s = listener->accept(Millis(200));
        if (!s.valid()) continue;  // timeout (or a failed accept): look at stop_ again
        conn_threads_.emplace_back([this, sock = std::move(s)]() mutable {
            std::unique_ptr<Transport> t;
            try {
                t = make_tcp_transport(std::move(sock));
                serve(*t, false);
            } catch (const std::exception& e) {
                log_warn(std::string("cluster node: ") + e.what());
            }
        });
    }
}

void ClusterWorker::serve(Transport& transport, bool paired, std::vector<uint8_t> first) {
    std::vector<uint8_t> msg = std::move(first);
    if (msg.empty()) transport.recv(msg, Millis(10000));
    const Hello h = decode_hello(msg);
    if (!paired && !secret_matches(opts_.secret, h.secret)) {
        log_warn("cluster node: refused " + transport.describe() + ": wrong cluster secret");
        transport.send(encode_failed("wrong cluster secret"), kSendTimeout);
        return;
    }
    if (h.kind == HelloKind::Coordinator) {
        run_session(transport);
        return;
    }
    // A link from another worker: park it until its session takes it, then wait for the end.
    PeerLink link;
    link.transport = &transport;
    const auto key = std::make_pair(h.session, static_cast<int>(h.rank));
    std::unique_lock lock(mu_);
    waiting_[key] = &link;
    cv_.notify_all();
    const auto give_up = std::chrono::steady_clock::now() + kPeerTimeout;
    while (!link.taken && !stop_)
        if (cv_.wait_until(lock, give_up) == std::cv_status::timeout) break;
    if (!link.taken) {
        waiting_.erase(key);
        log_warn("cluster node: a link from rank " + std::to_string(h.rank) +
                 " was never claimed by its session");
        return;
    }
    cv_.wait(lock, [&] { return link.done; });
}

std::unique_ptr<Transport> ClusterWorker::take_peer(uint64_t session, int rank, Millis timeout) {
    const auto key = std::make_pair(session, rank);
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return stop_ || waiting_.count(key); }) || stop_)
        throw Error("cluster: rank " + std::to_string(rank) + " did not connect within " +
                    std::to_string(timeout.count() / 1000) + " s");
    PeerLink* link = waiting_[key];
    waiting_.erase(key);
    link->taken = true;
    cv_.notify_all();
    return std::make_unique<BorrowedTransport>(*link->transport, [this, link] {
        std::lock_guard l(mu_);
        link->done = true;
        cv_.notify_all();
    });
}

void ClusterWorker::run_session(Transport& control) {
    using clock = std::chrono::steady_clock;
    std::vector<uint8_t> msg;
    control.send({reinterpret_cast<const uint8_t*>(info_.data()), info_.size()}, kSendTimeout);
    // Before the assignment the coordinator may only ping (it is calibrating the others).
    for (;;) {
        control.recv(msg, Millis(60000));
        const Msg m = type_of(msg);
        if (m == Msg::Ping) {
            control.send(encode_empty(Msg::Pong), kSendTimeout);
            continue;
        }
        if (m == Msg::End) return;
        if (m == Msg::Assign) break;
        throw Error(std::string("cluster: expected an assignment, got ") + msg_name(m));
    }
    Assignment a;
    std::shared_ptr<engine::Model> model;
    std::unique_ptr<engine::Engine> engine;
    std::vector<std::unique_ptr<Transport>> links;
    Ready ready;
    try {
        a = decode_assignment(msg);
        const auto t0 = clock::now();
        ++sessions_;
        // The shard: cache, a local copy with the same fingerprint, or the coordinator's stream.
        const fs::path cached = shard_cache_path(opts_.cache_dir, a.fingerprint, a.shard);
        std::error_code ec;
        fs::path path;
        if (fs::is_regular_file(cached, ec)) {
            path = cached;
            ready.source = "cache";
        } else if (auto local = find_model(opts_.model_dirs, a.model_name, a.fingerprint)) {
            path = *local;
            ready.source = "local file";
        }
        control.send(encode_need_shard(path.empty()), kSendTimeout);
        if (path.empty()) {
            path = receive_shard(control, cached, a.model_size);
            ready.source = "streamed";
        }
        planner::ShardLoadStats stats;
        model = planner::load_shard(path, a.shard, &stats);
        ready.shard_bytes = stats.buffer_bytes;
        BackendOptions bo;
        bo.threads = opts_.threads;
        engine::EngineOptions eo;
        eo.n_ctx = a.n_ctx;
        eo.n_batch = a.n_batch;
        eo.kv_type = a.kv_f32 ? DType::F32 : DType::F16;
        engine = std::make_unique<engine::Engine>(
            model, create_backend(opts_.backend, opts_.device, bo), eo);
        log_info("cluster node: session " + std::to_string(a.session) + ", " +
                 describe_shard(a.shard, model->hp) + " from " + ready.source + " (" +
                 path.string() + ")");
        // Links: the coordinator's connection is rank 0; connect to lower worker ranks, take
        // higher ones from the mailbox.
        const int n = a.shard.n_ranks, rank = a.shard.rank;
        links.resize(static_cast<size_t>(n));
        links[0] = std::make_unique<cluster::BorrowedTransport>(control);
        for (int k = 1; k < rank; ++k) {
            const HostPort hp = parse_host_port(a.addresses[k], 0);
            std::unique_ptr<Transport> t;
            if (opts_.identity && opts_.peers && !a.node_ids[k].empty()) {
                auto peer = opts_.peers->find(a.node_ids[k]);
                if (!peer)
                    throw Error("cluster: rank " + std::to_string(k) + " (node " + a.node_ids[k] +
                                ") is not paired with this node");
                t = make_channel_transport(SecureChannel::connect(hp, *opts_.identity, *peer));
            } else {
                t = make_tcp_transport(Socket::connect(hp, Millis(10000)));
            }
            Hello h;
            h.kind = HelloKind::Peer;
            h.secret = opts_.secret;
            h.session = a.session;
            h.rank = static_cast<uint32_t>(rank);
            t->send(encode(h), kSendTimeout);
            links[static_cast<size_t>(k)] = std::move(t);
        }
        for (int k = rank + 1; k < n; ++k)
            links[static_cast<size_t>(k)] = take_peer(a.session, k, kPeerTimeout);
        if (a.sim_delay_us > 0)  // benchmarks only: a simulated slower link
            for (auto& l : links)
                if (l)  // our own index stays empty
                    l = make_delay_transport(std::move(l),
                                             std::chrono::microseconds(a.sim_delay_us));
        ready.load_seconds = std::chrono::duration<double>(clock::now() - t0).count();
    } catch (const std::exception& e) {
        log_warn(std::string("cluster node: assignment failed: ") + e.what());
        control.send(encode_failed(e.what()), kSendTimeout);
        return;
    }

    CollectiveOptions co;
    co.wire = a.wire_bf16 ? WireType::BF16 : WireType::F32;
    co.timeout = Millis(a.timeout_ms);
    TransportCollective collective(a.shard.rank, std::move(links), co);
    engine->set_collective(&collective);
    control.send(encode(ready), kSendTimeout);

    StepCmd step;
    std::vector<float> logits;
    try {
        for (;;) {
            control.recv(msg, opts_.idle_timeout);
            const Msg m = type_of(msg);
            if (m == Msg::Step) {
                decode_step(msg, step);
                engine->truncate(step.n_past);
                engine->decode(step.ids, logits, step.all_logits);
            } else if (m == Msg::Ping) {
                control.send(encode_empty(Msg::Pong), kSendTimeout);
            } else if (m == Msg::End) {
                log_info("cluster node: session " + std::to_string(a.session) + " ended");
                break;
            } else {
                throw Error(std::string("cluster: unexpected ") + msg_name(m) + " message");
            }
        }
    } catch (const TimeoutError&) {
        log_warn("cluster node: session " + std::to_string(a.session) +
                 ": coordinator silent for " + std::to_string(opts_.idle_timeout.count()) +
                 " ms; ending the session");
    } catch (const std::exception& e) {
        log_warn("cluster node: session " + std::to_string(a.session) + " failed: " + e.what());
    }
    engine->set_collective(nullptr);
    collective.close();
}

bool is_cluster_hello(std::span<const uint8_t> msg) {
    return msg.size() >= 5 && msg[0] == uint8_t(Msg::Hello) &&
           ((uint32_t(msg[1]) << 24) | (uint32_t(msg[2]) << 16) | (uint32_t(msg[3]) << 8) |
            msg[4]) == kMagic;
}

namespace {
// A SecureChannel owned by the NodeService, as a Transport.
class ChannelRef : public Transport {
  public:
    explicit ChannelRef(SecureChannel& c) : c_(c) {}
    void send(std::span<const uint8_t> m, Millis timeout) override { c_.send(m, timeout); }
    void recv(std::vector<uint8_t>& out, Millis timeout) override { out = c_.recv(timeout); }
    void close() override { c_.close(); }
    std::string describe() const override { return c_.describe(); }

  private:
    SecureChannel& c_;
};
}  // namespace

std::function<void(SecureChannel&)> cluster_channel_handler(ClusterWorker& worker) {
    return [&worker](SecureChannel& ch) {
        std::vector<uint8_t> first;
        try {
            first = ch.recv(Millis(60'000));
        } catch (const std::exception&) {
            return;
        }
        if (!is_cluster_hello(first)) {
            ch.send(first, Millis(30'000));
            echo_handler(ch);
            return;
        }
        ChannelRef t(ch);
        try {
            worker.serve(t, true, std::move(first));
        } catch (const std::exception& e) {
            log_warn(std::string("cluster node: ") + e.what());
        }
    };
}

}  // namespace tandem::net
