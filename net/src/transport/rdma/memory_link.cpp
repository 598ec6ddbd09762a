// Two RdmaLinks joined in memory: a stand-in for a pair of connected RC queue pairs, so the ring
// protocol runs and is checked without RDMA hardware. A write lands in the peer's ring and
// completion queue; what a NIC would refuse (out-of-ring write, no receive posted, send queue
// overrun, oversized inline write) becomes a failed completion, as on hardware.
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "tandem/net/rdma_ring.h"

namespace tandem::net {
namespace {

struct Endpoint {
    std::vector<uint8_t> ring;    // the peer writes here
    std::vector<uint8_t> mirror;  // source of our non-inline writes
    std::mutex mu;
    std::deque<std::pair<RdmaCompletion, uint64_t>> cq;  // with the write's sequence number
    uint32_t receives_posted = 0;
    uint64_t posted_seq = 0,
             retired_seq = 0;  // send queue: posted vs. retired by a polled completion
    bool shut = false;
};

struct PendingWrite {
    int to = 0;
    size_t offset = 0;
    uint32_t len = 0, imm = 0;
    bool is_inline = false, signaled = false;
    std::vector<uint8_t> inline_copy;
    uint64_t seq = 0;
    Clock::time_point due;
};

struct Wire {
    MemoryLinkOptions opts;
    std::shared_ptr<MemoryLinkStats> stats;
    Endpoint ep[2];
    std::mutex qmu;
    std::condition_variable qcv;
    std::deque<PendingWrite> queue;
    bool stop = false;
    std::thread deliverer;

    ~Wire() {
        if (deliverer.joinable()) {
            {
                std::lock_guard l(qmu);
                stop = true;
            }
            qcv.notify_all();
            deliverer.join();
        }
    }

    void fault(int side, const char* what) {
        ++stats->faults;
        std::lock_guard l(ep[side].mu);
        RdmaCompletion c;
        c.kind = RdmaCompletion::Kind::Failed;
        c.error = what;
        ep[side].cq.emplace_back(c, 0);
    }

    // Lands one write in ep[w.to]; the locks are taken one at a time (never nested).
    void deliver(const PendingWrite& w) {
        Endpoint& dst = ep[w.to];
        const int from = 1 - w.to;
        const uint8_t* data =
            w.is_inline ? w.inline_copy.data() : ep[from].mirror.data() + w.offset;
        const char* refused = nullptr;
        {
            std::lock_guard l(dst.mu);
            if (dst.shut) return;  // the peer is gone: the write goes nowhere
            if (w.offset + w.len > dst.ring.size())
                refused = "remote access error: write outside the registered ring";
            else if (dst.receives_posted == 0)
                refused = "receiver not ready: write with immediate and no receive posted";
            if (!refused) {
                if (w.len) std::memcpy(dst.ring.data() + w.offset, data, w.len);
                --dst.receives_posted;
                RdmaCompletion c;
                c.kind = RdmaCompletion::Kind::Received;
                c.imm = w.imm;
                c.byte_len = w.len;
                dst.cq.emplace_back(c, 0);
            }
        }
        if (refused) {
            fault(from, refused);
            return;
        }
        if (w.signaled) {
            std::lock_guard l(ep[from].mu);
            RdmaCompletion c;
            c.kind = RdmaCompletion::Kind::SendDone;
            ep[from].cq.emplace_back(c, w.seq);
        }
    }

    void run_deliverer() {
        std::unique_lock l(qmu);
        for (;;) {
            qcv.wait(l, [&] { return stop || !queue.empty(); });
            if (stop) return;
            PendingWrite w = std::move(queue.front());
            queue.pop_front();
            l.unlock();
            while (Clock::now() < w.due) std::this_thread::yield();
            deliver(w);
            l.lock();
        }
    }
};

class MemoryLink : public RdmaLink {
  public:
    MemoryLink(std::shared_ptr<Wire> wire, int side) : wire_(std::move(wire)), side_(side) {}
    ~MemoryLink() override { shutdown(); }

    RingGeometry geometry() const override { return wire_->opts.geometry; }
    uint8_t* send_mirror() override { return me().mirror.data(); }
    const uint8_t* recv_ring() const override { return wire_->ep[side_].ring.data(); }
    size_t max_inline() const override { return wire_->opts.max_inline; }
    uint32_t send_queue_depth() const override { return wire_->opts.send_queue_depth; }

    void post_write(size_t offset, uint32_t len, uint32_t imm, const uint8_t* inline_data,
                    bool signaled) override {
        if (inline_data && len > wire_->opts.max_inline)
            throw Error("memory rdma link: inline write larger than max_inline");
        PendingWrite w;
        {
            std::lock_guard l(me().mu);
            if (me().posted_seq - me().retired_seq >= wire_->opts.send_queue_depth)
                throw Error(
                    "memory rdma link: send queue overrun (more writes outstanding "
                    "than its depth)");
            w.seq = ++me().posted_seq;
        }
        w.to = 1 - side_;
        w.offset = offset;
        w.len = len;
        w.imm = imm;
        w.signaled = signaled;
        w.is_inline = inline_data != nullptr;
        if (w.is_inline) w.inline_copy.assign(inline_data, inline_data + len);
        auto& st = *wire_->stats;
        const ImmKind k = imm_kind(imm);
        if (k == ImmKind::Credit)
            ++st.credit_writes;
        else if (k == ImmKind::Data || k == ImmKind::DataEnd)
            ++(w.is_inline ? st.inline_writes : st.mirror_writes);
        if (wire_->opts.deliver_delay.count() == 0) {
            wire_->deliver(w);
            return;
        }
        w.due = Clock::now() + wire_->opts.deliver_delay;
        {
            std::lock_guard l(wire_->qmu);
            wire_->queue.push_back(std::move(w));
        }
        wire_->qcv.notify_one();
    }

    void post_receives(uint32_t count) override {
        std::lock_guard l(me().mu);
        me().receives_posted += count;
        if (me().receives_posted > geometry().receive_depth())
            throw Error("memory rdma link: receive queue overrun");
    }

    int poll(std::span<RdmaCompletion> out) override {
        std::lock_guard l(me().mu);
        int n = 0;
        while (n < static_cast<int>(out.size()) && !me().cq.empty()) {
            auto [c, seq] = me().cq.front();
            me().cq.pop_front();
            if (c.kind == RdmaCompletion::Kind::SendDone) me().retired_seq = seq;
            out[static_cast<size_t>(n++)] = c;
        }
        return n;
    }

    bool peer_gone() override {
        Endpoint& peer = wire_->ep[1 - side_];
        std::lock_guard l(peer.mu);
        return peer.shut;
    }

    void shutdown() override {
        std::lock_guard l(me().mu);
        me().shut = true;
    }

    std::string describe() const override {
        return "memory link side " + std::to_string(1 - side_) + " (simulated)";
    }

  private:
    Endpoint& me() { return wire_->ep[side_]; }
    std::shared_ptr<Wire> wire_;
    int side_;
};

}  // namespace

std::pair<std::unique_ptr<RdmaLink>, std::unique_ptr<RdmaLink>> make_memory_link_pair(
    const MemoryLinkOptions& opts, std::shared_ptr<MemoryLinkStats> stats) {
    auto wire = std::make_shared<Wire>();
    wire->opts = opts;
    wire->stats = stats ? std::move(stats) : std::make_shared<MemoryLinkStats>();
    for (auto& e : wire->ep) {
        e.ring.assign(opts.geometry.ring_bytes(), 0);
        e.mirror.assign(opts.geometry.ring_bytes(), 0);
        e.receives_posted = opts.geometry.receive_depth();
    }
    if (opts.deliver_delay.count() > 0)
        wire->deliverer = std::thread([w = wire.get()] { w->run_deliverer(); });
    return {std::make_unique<MemoryLink>(wire, 0), std::make_unique<MemoryLink>(wire, 1)};
}

}  // namespace tandem::net
