#pragma once
// The RDMA ring protocol: how one ordered message stream is carried by RDMA writes with immediate
// data into a ring buffer the peer registered. The protocol is hardware-free; it talks to the NIC
// through RdmaLink, which is libibverbs on real hardware (verbs_link.cpp) and plain memory plus a
// delivery thread in tests (make_memory_link_pair), so the same code is tested without a device.
//
// Layout. Each direction has one ring of `granules x granule` bytes in the receiver's registered
// memory. The sender writes a message as one or more chunks; a chunk starts on a granule boundary,
// occupies ceil(len / granule) granules (an empty chunk occupies one), and never crosses the ring
// end: a chunk that would is cut at the end and the rest continues at offset 0. Both sides advance
// through the ring in the same order, so the offset is implied and not sent.
//
// Immediate data (32 bits, sent big-endian as verbs requires):
//   bits 31..30  kind: 0 data chunk, 1 data chunk that ends a message, 2 credit, 3 close
//   bits 29..0   data: chunk length in bytes; credit: granules handed back; close: 0
//
// Credits. The sender may have at most `granules` granules written and not yet handed back. The
// receiver hands granules back (one credit write) once it has copied out a quarter of the ring.
// Because every chunk costs at least one granule, credits also bound the writes in flight, so the
// receive queue (one receive request per write with immediate) never runs dry: it holds
// granules + kReceiveSlack requests, reposted in batches of kRepostBatch.
//
// The sender keeps a local mirror of the peer's ring: a chunk too big to send inline is copied to
// the mirror at the offset it will land at and written from there; that space is reused only after
// the peer hands it back, by which time the write has completed.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "tandem/net/transport.h"

namespace tandem::net {

enum class ImmKind : uint32_t { Data = 0, DataEnd = 1, Credit = 2, Close = 3 };

constexpr uint32_t kImmValueBits = 30;
constexpr uint32_t kImmValueMax = (1u << kImmValueBits) - 1;

constexpr uint32_t encode_imm(ImmKind kind, uint32_t value) {
    return (static_cast<uint32_t>(kind) << kImmValueBits) | (value & kImmValueMax);
}
constexpr ImmKind imm_kind(uint32_t imm) {
    return static_cast<ImmKind>(imm >> kImmValueBits);
}
constexpr uint32_t imm_value(uint32_t imm) {
    return imm & kImmValueMax;
}

// Receive requests beyond `granules`: up to 4 credit writes (each hands back >= a quarter of the
// ring), one close, and the batch not yet reposted.
constexpr uint32_t kRepostBatch = 16;
constexpr uint32_t kReceiveSlack = 32;

struct RingGeometry {
    uint32_t granule = 0;   // bytes
    uint32_t granules = 0;  // ring bytes = granule * granules
    uint32_t receive_depth() const { return granules + kReceiveSlack; }
    // Granules consumed before a credit write hands them back.
    uint32_t credit_threshold() const { return granules >= 4 ? granules / 4 : 1; }
    size_t ring_bytes() const { return size_t(granule) * granules; }
    // Granules a chunk of `len` bytes occupies (an empty chunk still takes one).
    uint32_t granules_for(size_t len) const {
        return len == 0 ? 1u : static_cast<uint32_t>((len + granule - 1) / granule);
    }
};

// ring_bytes rounded down to whole granules; throws tandem::Error on a geometry the immediate
// encoding cannot carry (ring >= 1 GiB, granule not a power of two, fewer than 2 granules).
RingGeometry make_ring_geometry(size_t ring_bytes, size_t granule);

struct RdmaCompletion {
    enum class Kind : uint8_t { Received, SendDone, Failed };
    Kind kind = Kind::Failed;
    uint32_t imm = 0;             // Received: host byte order
    uint32_t byte_len = 0;        // Received: bytes the write carried
    const char* error = nullptr;  // Failed: static text (ibv_wc_status_str or the fake's)
};

// What the ring protocol needs from an RC queue pair whose peer registered a ring for us.
// Called with the transport's lock held: one caller at a time.
class RdmaLink {
  public:
    virtual ~RdmaLink() = default;
    virtual RingGeometry geometry() const = 0;
    // Local registered copy of the peer's ring: source of non-inline writes (same offsets).
    virtual uint8_t* send_mirror() = 0;
    // The ring the peer writes into.
    virtual const uint8_t* recv_ring() const = 0;
    virtual size_t max_inline() const = 0;
    virtual uint32_t send_queue_depth() const = 0;
    // RDMA write with immediate of `len` bytes to offset `offset` of the peer's ring. Source:
    // `inline_data` when not null (copied before this returns, len <= max_inline()), else
    // send_mirror() + offset, read until the write completes. `signaled`: report a SendDone.
    virtual void post_write(size_t offset, uint32_t len, uint32_t imm, const uint8_t* inline_data,
                            bool signaled) = 0;
    // Posts `count` receive requests (the link posts geometry().receive_depth() at set-up).
    virtual void post_receives(uint32_t count) = 0;
    // Completions in order; returns how many were written to `out`.
    virtual int poll(std::span<RdmaCompletion> out) = 0;
    // Cheap probe of the connection the link was set up over: true once the peer is gone.
    virtual bool peer_gone() = 0;
    virtual void shutdown() = 0;
    virtual std::string describe() const = 0;
};

struct RingOptions {
    size_t max_message = size_t(1) << 30;
    // Spin on the completion queue this long before also yielding the CPU while waiting. Pure
    // spinning is the latency floor with a core per waiting thread; on an oversubscribed machine
    // it delays the very thread it waits for (bench-cluster-net --memory shows both).
    std::chrono::microseconds busy_poll{20};
};

// The ring protocol as a Transport. send() and recv() may run on two threads at once.
std::unique_ptr<Transport> make_ring_transport(std::unique_ptr<RdmaLink> link,
                                               const RingOptions& opts = {});

// In-memory links for tests: what one writes lands in the other's ring and completion queue.
// They check what real hardware would fault on: writes outside the ring, a write arriving with
// no receive posted (RNR), more writes outstanding than the send queue holds, inline writes over
// max_inline. `deliver_delay` > 0 delivers from a separate thread after that delay, reading the
// mirror only then, so reusing mirror space too early corrupts data the way hardware would.
struct MemoryLinkOptions {
    RingGeometry geometry{64, 64};
    size_t max_inline = 64;
    uint32_t send_queue_depth = 16;
    std::chrono::microseconds deliver_delay{0};
};
struct MemoryLinkStats {
    std::atomic<uint64_t> inline_writes{0}, mirror_writes{0}, credit_writes{0}, faults{0};
};
std::pair<std::unique_ptr<RdmaLink>, std::unique_ptr<RdmaLink>> make_memory_link_pair(
    const MemoryLinkOptions& opts, std::shared_ptr<MemoryLinkStats> stats = nullptr);

}  // namespace tandem::net
