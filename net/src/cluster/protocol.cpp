#include "protocol.h"

#include <cstring>

namespace tandem::net::cluster {

namespace {

WireWriter start(Msg m) {
    WireWriter w;
    w.u8(static_cast<uint8_t>(m));
    return w;
}

WireReader open(std::span<const uint8_t> msg, Msg want) {
    const Msg got = type_of(msg);
    if (got != want)
        throw Error(std::string("cluster: expected a ") + msg_name(want) + " message, got " +
                    msg_name(got));
    WireReader r(msg, std::string("cluster ") + msg_name(want));
    r.u8("type");
    return r;
}

void put_str(WireWriter& w, const std::string& s, const char* field) {
    w.u32(static_cast<uint32_t>(s.size()));
    w.bytes({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
    (void)field;
}
std::string get_str(WireReader& r, const char* field, size_t max = 4096) {
    const uint32_t n = r.u32(field);
    if (n > max) r.fail(field, "length " + std::to_string(n) + " exceeds " + std::to_string(max));
    auto b = r.take(n, field);
    return {b.begin(), b.end()};
}
void put_i64(WireWriter& w, int64_t v) {
    w.u64(static_cast<uint64_t>(v));
}
int64_t get_i64(WireReader& r, const char* f) {
    return static_cast<int64_t>(r.u64(f));
}
void put_f64(WireWriter& w, double v) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    w.u64(b);
}
double get_f64(WireReader& r, const char* f) {
    const uint64_t b = r.u64(f);
    double v;
    std::memcpy(&v, &b, 8);
    return v;
}

}  // namespace

const char* msg_name(Msg m) {
    switch (m) {
        case Msg::Hello:
            return "hello";
        case Msg::Info:
            return "info";
        case Msg::Assign:
            return "assign";
        case Msg::NeedShard:
            return "need-shard";
        case Msg::ShardChunk:
            return "shard-chunk";
        case Msg::ShardEnd:
            return "shard-end";
        case Msg::Ready:
            return "ready";
        case Msg::Failed:
            return "failed";
        case Msg::Step:
            return "step";
        case Msg::Ping:
            return "ping";
        case Msg::Pong:
            return "pong";
        case Msg::End:
            return "end";
    }
    return "unknown";
}

Msg type_of(std::span<const uint8_t> msg) {
    if (msg.empty()) throw Error("cluster: empty message");
    if (msg[0] < uint8_t(Msg::Hello) || msg[0] > uint8_t(Msg::End))
        throw Error("cluster: unknown message type " + std::to_string(msg[0]));
    return static_cast<Msg>(msg[0]);
}

std::vector<uint8_t> encode(const Hello& h) {
    WireWriter w = start(Msg::Hello);
    w.u32(kMagic);
    w.u8(kVersion);
    w.u8(static_cast<uint8_t>(h.kind));
    w.str8(h.secret, "secret");
    w.u64(h.session);
    w.u32(h.rank);
    return w.take();
}

Hello decode_hello(std::span<const uint8_t> msg) {
    WireReader r = open(msg, Msg::Hello);
    if (r.u32("magic") != kMagic) r.fail("magic", "not a Tandem cluster connection");
    const uint8_t v = r.u8("version");
    if (v != kVersion)
        r.fail("version",
               "protocol " + std::to_string(v) + ", this node speaks " + std::to_string(kVersion));
    Hello h;
    const uint8_t k = r.u8("kind");
    if (k != uint8_t(HelloKind::Coordinator) && k != uint8_t(HelloKind::Peer))
        r.fail("kind", "unknown kind " + std::to_string(k));
    h.kind = static_cast<HelloKind>(k);
    h.secret = r.str8("secret");
    h.session = r.u64("session");
    h.rank = r.u32("rank");
    r.expect_end();
    return h;
}

std::vector<uint8_t> encode(const NodeInfo& i) {
    WireWriter w = start(Msg::Info);
    w.str8(i.name, "name");
    w.str8(i.backend, "backend");
    w.str8(i.device.substr(0, 200), "device");
    w.u64(i.memory_free);
    put_f64(w, i.matvec_gbps);
    return w.take();
}

NodeInfo decode_info(std::span<const uint8_t> msg) {
    WireReader r = open(msg, Msg::Info);
    NodeInfo i;
    i.name = r.str8("name");
    i.backend = r.str8("backend");
    i.device = r.str8("device");
    i.memory_free = r.u64("memory_free");
    i.matvec_gbps = get_f64(r, "matvec_gbps");
    r.expect_end();
    return i;
}

std::vector<uint8_t> encode(const Assignment& a) {
    WireWriter w = start(Msg::Assign);
    w.u64(a.session);
    const auto& s = a.shard;
    w.u32(static_cast<uint32_t>(s.rank));
    w.u32(static_cast<uint32_t>(s.n_ranks));
    for (int64_t v : {s.kv_head_begin, s.kv_head_end, s.q_head_begin, s.q_head_end, s.ff_begin,
                      s.ff_end, s.expert_begin, s.expert_end, s.vocab_begin, s.vocab_end})
        put_i64(w, v);
    w.str8(a.model_name, "model_name");
    w.str8(a.fingerprint, "fingerprint");
    w.u64(a.model_size);
    put_i64(w, a.n_ctx);
    put_i64(w, a.n_batch);
    w.u8(a.kv_f32);
    w.u8(a.wire_bf16);
    w.u32(a.timeout_ms);
    w.u32(a.sim_delay_us);
    w.u8(static_cast<uint8_t>(a.addresses.size()));
    for (size_t k = 0; k < a.addresses.size(); ++k) {
        w.str8(a.addresses[k], "address");
        w.str8(k < a.node_ids.size() ? a.node_ids[k] : "", "node_id");
    }
    return w.take();
}

Assignment decode_assignment(std::span<const uint8_t> msg) {
    WireReader r = open(msg, Msg::Assign);
    Assignment a;
    a.session = r.u64("session");
    auto& s = a.shard;
    s.rank = static_cast<int>(r.u32("rank"));
    s.n_ranks = static_cast<int>(r.u32("n_ranks"));
    if (s.n_ranks < 2 || s.n_ranks > 64 || s.rank < 1 || s.rank >= s.n_ranks)
        r.fail("rank", "rank " + std::to_string(s.rank) + " of " + std::to_string(s.n_ranks) +
                           " is not a worker rank");
    for (int64_t* v :
         {&s.kv_head_begin, &s.kv_head_end, &s.q_head_begin, &s.q_head_end, &s.ff_begin, &s.ff_end,
          &s.expert_begin, &s.expert_end, &s.vocab_begin, &s.vocab_end})
        *v = get_i64(r, "shard");
    a.model_name = r.str8("model_name");
    a.fingerprint = r.str8("fingerprint");
    a.model_size = r.u64("model_size");
    a.n_ctx = get_i64(r, "n_ctx");
    a.n_batch = get_i64(r, "n_batch");
    a.kv_f32 = r.u8("kv_f32");
    a.wire_bf16 = r.u8("wire_bf16");
    a.timeout_ms = r.u32("timeout_ms");
    a.sim_delay_us = r.u32("sim_delay_us");
    const size_t n = r.u8("n_addresses");
    if (n != size_t(s.n_ranks)) r.fail("n_addresses", "one address per rank expected");
    for (size_t k = 0; k < n; ++k) {
        a.addresses.push_back(r.str8("address"));
        a.node_ids.push_back(r.str8("node_id"));
    }
    r.expect_end();
    // The model name becomes a file name on the worker: no folders.
    if (a.model_name.empty() || a.model_name.find('/') != std::string::npos ||
        a.model_name == "." || a.model_name == "..")
        throw Error("cluster assign: model name '" + a.model_name + "' is not a file name");
    if (a.fingerprint.size() != 64 ||
        a.fingerprint.find_first_not_of("0123456789abcdef") != std::string::npos)
        throw Error("cluster assign: fingerprint is not 64 hex digits");
    return a;
}

std::vector<uint8_t> encode(const Ready& rd) {
    WireWriter w = start(Msg::Ready);
    w.str8(rd.source, "source");
    w.u64(rd.shard_bytes);
    put_f64(w, rd.load_seconds);
    return w.take();
}

Ready decode_ready(std::span<const uint8_t> msg) {
    WireReader r = open(msg, Msg::Ready);
    Ready rd;
    rd.source = r.str8("source");
    rd.shard_bytes = r.u64("shard_bytes");
    rd.load_seconds = get_f64(r, "load_seconds");
    r.expect_end();
    return rd;
}

std::vector<uint8_t> encode_failed(const std::string& why) {
    WireWriter w = start(Msg::Failed);
    put_str(w, why.substr(0, 4000), "message");
    return w.take();
}

std::string decode_failed(std::span<const uint8_t> msg) {
    WireReader r = open(msg, Msg::Failed);
    return get_str(r, "message");
}

std::vector<uint8_t> encode_step(int64_t n_past, std::span<const int32_t> ids, bool all_logits) {
    WireWriter w = start(Msg::Step);
    put_i64(w, n_past);
    w.u8(all_logits ? 1 : 0);
    w.u32(static_cast<uint32_t>(ids.size()));
    for (int32_t id : ids) w.u32(static_cast<uint32_t>(id));
    return w.take();
}

void decode_step(std::span<const uint8_t> msg, StepCmd& out) {
    WireReader r = open(msg, Msg::Step);
    out.n_past = get_i64(r, "n_past");
    out.all_logits = r.u8("all_logits") != 0;
    const uint32_t n = r.u32("n_ids");
    if (n == 0 || size_t(n) * 4 != r.remaining()) r.fail("n_ids", "does not match the ids sent");
    out.ids.resize(n);
    for (uint32_t k = 0; k < n; ++k) out.ids[k] = static_cast<int32_t>(r.u32("id"));
}

std::vector<uint8_t> encode_need_shard(bool need) {
    WireWriter w = start(Msg::NeedShard);
    w.u8(need ? 1 : 0);
    return w.take();
}

bool decode_need_shard(std::span<const uint8_t> msg) {
    WireReader r = open(msg, Msg::NeedShard);
    const uint8_t v = r.u8("need");
    r.expect_end();
    return v != 0;
}

std::vector<uint8_t> encode_empty(Msg m) {
    return start(m).take();
}

}  // namespace tandem::net::cluster
