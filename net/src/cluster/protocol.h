#pragma once
// Messages of the tensor-parallel runtime between a coordinator and its workers (and between
// workers: a peer hello). Every connection starts with a Hello; a coordinator session then runs
// Assign -> (shard stream) -> Ready -> Step/Ping... -> End. Collective traffic (all-reduce,
// all-gather) travels on the same streams between the control messages, in lock-step.
//
// Encoding: WireWriter/WireReader (big-endian, bounds-checked); token ids as u32.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tandem/engine/model.h"
#include "tandem/net/wire.h"

namespace tandem::net::cluster {

inline constexpr uint32_t kMagic = 0x544E5450;  // "TNTP"
inline constexpr uint8_t kVersion = 1;

enum class Msg : uint8_t {
    Hello = 1,   // first message of a connection
    Info,        // worker -> coordinator: what the node is (calibration, memory)
    Assign,      // coordinator -> worker: the shard and the group
    NeedShard,   // worker -> coordinator: whether it needs the shard streamed
    ShardChunk,  // coordinator -> worker: offset + bytes of the shard's ranges (header first)
    ShardEnd,    // coordinator -> worker: all ranges sent
    Ready,       // worker -> coordinator: shard loaded, engine built, peers connected
    Failed,      // worker -> coordinator: the assignment failed (message)
    Step,        // coordinator -> worker: run Engine::decode on these tokens
    Ping,        // heartbeat while idle
    Pong,
    End,  // coordinator -> worker: session over
};
const char* msg_name(Msg m);

enum class HelloKind : uint8_t { Coordinator = 1, Peer = 2 };

struct Hello {
    HelloKind kind = HelloKind::Coordinator;
    std::string secret;  // static mode; ignored on a paired, encrypted channel
    uint64_t session = 0;
    uint32_t rank = 0;  // Peer: the connecting rank
};

struct NodeInfo {
    std::string name, backend, device;
    uint64_t memory_free = 0;
    double matvec_gbps = 0;  // calibration: bytes of quantized weights read per second
};

struct Assignment {
    uint64_t session = 0;
    engine::ShardSpec shard;
    std::string model_name;   // file name, for looking in the node's model folders
    std::string fingerprint;  // BLAKE2b-256 of the whole file (hex)
    uint64_t model_size = 0;
    int64_t n_ctx = 0, n_batch = 512;
    uint8_t kv_f32 = 0, wire_bf16 = 0;
    uint32_t timeout_ms = 2000;
    uint32_t sim_delay_us = 0;  // simulation: one-way delay added to every collective message
    // Where rank k can be reached by the other workers (index 0, the coordinator, unused):
    // host:port, plus the node id on paired channels.
    std::vector<std::string> addresses, node_ids;
};

struct Ready {
    std::string source;  // "local file", "cache", "streamed"
    uint64_t shard_bytes = 0;
    double load_seconds = 0;
};

struct StepCmd {
    int64_t n_past = 0;
    bool all_logits = false;
    std::vector<int32_t> ids;
};

// Encoders return the whole message (type byte first).
std::vector<uint8_t> encode(const Hello& h);
std::vector<uint8_t> encode(const NodeInfo& i);
std::vector<uint8_t> encode(const Assignment& a);
std::vector<uint8_t> encode(const Ready& r);
std::vector<uint8_t> encode_failed(const std::string& why);
std::vector<uint8_t> encode_step(int64_t n_past, std::span<const int32_t> ids, bool all_logits);
std::vector<uint8_t> encode_empty(Msg m);  // ShardEnd, Ping, Pong, End
std::vector<uint8_t> encode_need_shard(bool need);
bool decode_need_shard(std::span<const uint8_t> msg);

// The type of a message; throws on an empty or unknown one.
Msg type_of(std::span<const uint8_t> msg);
// Throws tandem::Error naming the message and field when it is not the expected type or is
// malformed.
Hello decode_hello(std::span<const uint8_t> msg);
NodeInfo decode_info(std::span<const uint8_t> msg);
Assignment decode_assignment(std::span<const uint8_t> msg);
Ready decode_ready(std::span<const uint8_t> msg);
std::string decode_failed(std::span<const uint8_t> msg);
void decode_step(std::span<const uint8_t> msg, StepCmd& out);  // reuses out.ids

}  // namespace tandem::net::cluster
