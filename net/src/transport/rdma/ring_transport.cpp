// The ring protocol of rdma_ring.h as a Transport, over any RdmaLink.
#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <thread>

#include "tandem/net/rdma_ring.h"

namespace tandem::net {

RingGeometry make_ring_geometry(size_t ring_bytes, size_t granule) {
    if (granule == 0 || (granule & (granule - 1)) != 0 || granule > kImmValueMax)
        throw Error("rdma ring: granule of " + std::to_string(granule) +
                    " bytes is not a power of two");
    if (ring_bytes > kImmValueMax)
        throw Error("rdma ring: ring of " + std::to_string(ring_bytes) +
                    " bytes exceeds the 1 GiB the immediate data can describe");
    const size_t n = ring_bytes / granule;
    if (n < 2)
        throw Error("rdma ring: ring of " + std::to_string(ring_bytes) +
                    " bytes holds fewer than two granules of " + std::to_string(granule));
    return {static_cast<uint32_t>(granule), static_cast<uint32_t>(n)};
}

namespace {

class RingTransport : public Transport {
  public:
    RingTransport(std::unique_ptr<RdmaLink> link, const RingOptions& opts)
        : link_(std::move(link)),
          geo_(link_->geometry()),
          opts_(opts),
          credits_(geo_.granules),
          arrived_(geo_.receive_depth()),
          signal_every_(std::max<uint32_t>(1, link_->send_queue_depth() / 2)),
          // Chunks of a quarter ring let the receiver hand space back while we keep writing.
          max_chunk_(size_t(geo_.credit_threshold()) * geo_.granule) {}

    ~RingTransport() override {
        try {
            close();
        } catch (...) {
        }
    }

    void send(std::span<const uint8_t> message, Millis timeout) override {
        std::lock_guard sending(send_mu_);
        if (message.size() > opts_.max_message)
            throw Error("rdma transport to " + link_->describe() + ": message of " +
                        std::to_string(message.size()) + " bytes exceeds the limit");
        const auto deadline = Clock::now() + timeout;
        size_t off = 0;
        do {
            std::unique_lock lk(mu_);
            wait(lk, deadline, "hand back ring space",
                 [&] { return credits_ > 0 && sq_outstanding_ < link_->send_queue_depth(); });
            throw_if_unusable(/*for_send=*/true);
            size_t len = std::min(message.size() - off, max_chunk_);
            len = std::min(len, size_t(geo_.granules - tail_) * geo_.granule);  // no wrap
            len = std::min(len, size_t(credits_) * geo_.granule);
            const uint32_t g = geo_.granules_for(len);
            const size_t offset = size_t(tail_) * geo_.granule;
            const bool last = off + len == message.size();
            const uint32_t imm =
                encode_imm(last ? ImmKind::DataEnd : ImmKind::Data, static_cast<uint32_t>(len));
            // The granules are ours until the peer hands them back: copy outside the lock.
            tail_ = (tail_ + g) % geo_.granules;
            credits_ -= g;
            const uint8_t* src = message.data() + off;
            if (len <= link_->max_inline()) {
                post(offset, static_cast<uint32_t>(len), imm, len ? src : nullptr, true);
            } else {
                lk.unlock();
                std::memcpy(link_->send_mirror() + offset, src, len);
                lk.lock();
                // A credit write from the receiving thread may have taken the last slot.
                wait(lk, deadline, "free a send-queue slot",
                     [&] { return sq_outstanding_ < link_->send_queue_depth(); });
                throw_if_unusable(/*for_send=*/true);
                post(offset, static_cast<uint32_t>(len), imm, nullptr, false);
            }
            off += len;
        } while (off < message.size());
    }

    void recv(std::vector<uint8_t>& out, Millis timeout) override {
        std::lock_guard receiving(recv_mu_);
        const auto deadline = Clock::now() + timeout;
        out.clear();
        const uint8_t* ring = link_->recv_ring();
        for (;;) {
            uint32_t imm = 0;
            {
                std::unique_lock lk(mu_);
                wait(lk, deadline, "send a message", [&] { return arrived_count_ > 0; });
                if (arrived_count_ == 0) {
                    throw_if_unusable(/*for_send=*/false);
                    if (!out.empty() || mid_message_)
                        throw Error("rdma transport from " + link_->describe() +
                                    ": peer closed in the middle of a message");
                    throw ClosedError("rdma transport: " + link_->describe() + " closed");
                }
                imm = arrived_[arrived_head_];
                arrived_head_ = (arrived_head_ + 1) % arrived_.size();
                --arrived_count_;
            }
            const uint32_t len = imm_value(imm);
            const uint32_t g = geo_.granules_for(len);
            if (head_ + g > geo_.granules)
                throw Error("rdma transport from " + link_->describe() + ": chunk of " +
                            std::to_string(len) + " bytes at granule " + std::to_string(head_) +
                            " crosses the ring end (corrupt stream?)");
            if (out.size() + len > opts_.max_message)
                throw Error("rdma transport from " + link_->describe() +
                            ": message exceeds the limit of " + std::to_string(opts_.max_message) +
                            " bytes");
            const uint8_t* src = ring + size_t(head_) * geo_.granule;
            out.insert(out.end(), src, src + len);
            const bool last = imm_kind(imm) == ImmKind::DataEnd;
            mid_message_ = !last;
            std::unique_lock lk(mu_);
            head_ = (head_ + g) % geo_.granules;
            freed_ += g;
            if (freed_ >= geo_.credit_threshold()) {
                wait(lk, deadline, "take a credit write",
                     [&] { return sq_outstanding_ < link_->send_queue_depth(); });
                if (sq_outstanding_ < link_->send_queue_depth() && !closed_) {
                    post(0, 0, encode_imm(ImmKind::Credit, freed_), nullptr, true);
                    freed_ = 0;
                }
            }
            if (last) return;
        }
    }

    void close() override {
        std::unique_lock lk(mu_);
        if (closed_) return;
        if (error_.empty() && !peer_closed_) {
            try {
                wait(lk, Clock::now() + Millis(100), "take the close write",
                     [&] { return sq_outstanding_ < link_->send_queue_depth(); });
                if (sq_outstanding_ < link_->send_queue_depth())
                    post(0, 0, encode_imm(ImmKind::Close, 0), nullptr, true);
            } catch (const std::exception&) {  // closing anyway
            }
        }
        closed_ = true;
        link_->shutdown();
    }

    std::string describe() const override { return "rdma " + link_->describe(); }

  private:
    // Posts one write; mu_ held and a send-queue slot free. Every signal_every_-th write asks
    // for a completion, which retires it and every unsignaled write before it.
    void post(size_t offset, uint32_t len, uint32_t imm, const uint8_t* inline_data,
              bool is_inline) {
        const bool signaled = ++since_signal_ == signal_every_;
        if (signaled) since_signal_ = 0;
        ++sq_outstanding_;
        link_->post_write(offset, len, imm, is_inline ? inline_data : nullptr, signaled);
    }

    // Drains the completion queue; mu_ held.
    void progress() {
        std::array<RdmaCompletion, 16> wc;
        const int n = link_->poll(wc);
        for (int i = 0; i < n; ++i) {
            const RdmaCompletion& c = wc[static_cast<size_t>(i)];
            if (c.kind == RdmaCompletion::Kind::Failed) {
                if (error_.empty()) error_ = c.error ? c.error : "unknown completion error";
                continue;
            }
            if (c.kind == RdmaCompletion::Kind::SendDone) {
                sq_outstanding_ -= std::min(sq_outstanding_, signal_every_);
                continue;
            }
            ++to_repost_;
            switch (imm_kind(c.imm)) {
                case ImmKind::Data:
                case ImmKind::DataEnd:
                    if (c.byte_len != imm_value(c.imm) || arrived_count_ == arrived_.size()) {
                        if (error_.empty()) error_ = "protocol violation (chunk length or count)";
                        break;
                    }
                    arrived_[(arrived_head_ + arrived_count_) % arrived_.size()] = c.imm;
                    ++arrived_count_;
                    break;
                case ImmKind::Credit:
                    credits_ += imm_value(c.imm);
                    if (credits_ > geo_.granules && error_.empty())
                        error_ = "protocol violation (peer handed back more ring than lent)";
                    break;
                case ImmKind::Close:
                    peer_closed_ = true;
                    break;
            }
        }
        if (to_repost_ >= kRepostBatch && !closed_) {
            link_->post_receives(to_repost_);
            to_repost_ = 0;
        }
    }

    // Busy-polls until ready(), an error, the peer closing, or the deadline (TimeoutError).
    // Spins for opts_.busy_poll, then yields the CPU between polls; lets other threads at the
    // lock every few polls; probes the set-up connection for a vanished peer every 10 ms.
    template <class Ready>
    void wait(std::unique_lock<std::mutex>& lk, Clock::time_point deadline, const char* what,
              Ready ready) {
        const auto start = Clock::now();
        auto next_probe = start + Millis(10);
        for (uint32_t spin = 0;; ++spin) {
            progress();
            if (ready() || !error_.empty() || peer_closed_ || closed_) return;
            if ((spin & 31) != 31) continue;
            const auto now = Clock::now();
            if (now >= deadline)
                throw TimeoutError("rdma transport: " + link_->describe() + " did not " + what +
                                   " in time");
            if (now >= next_probe) {
                next_probe = now + Millis(10);
                if (link_->peer_gone()) peer_closed_ = true;
            }
            lk.unlock();
            if (now - start > opts_.busy_poll) std::this_thread::yield();
            lk.lock();
        }
    }

    void throw_if_unusable(bool for_send) {
        if (!error_.empty())
            throw Error("rdma transport " + link_->describe() + " failed: " + error_);
        if (closed_) throw ClosedError("rdma transport " + link_->describe() + ": closed here");
        if (peer_closed_ && for_send)
            throw ClosedError("rdma transport: " + link_->describe() + " closed");
    }

    std::unique_ptr<RdmaLink> link_;
    const RingGeometry geo_;
    const RingOptions opts_;
    std::mutex send_mu_, recv_mu_;   // one sender, one receiver
    std::mutex mu_;                  // the link and everything below
    uint32_t credits_;               // granules of the peer's ring we may still fill
    uint32_t tail_ = 0;              // next granule we write in the peer's ring
    uint32_t head_ = 0;              // next granule we read in ours
    uint32_t freed_ = 0;             // read, not yet handed back
    std::vector<uint32_t> arrived_;  // immediates of chunks not yet read (a queue)
    size_t arrived_head_ = 0, arrived_count_ = 0;
    uint32_t to_repost_ = 0;
    uint32_t sq_outstanding_ = 0, since_signal_ = 0;
    const uint32_t signal_every_;
    const size_t max_chunk_;
    bool mid_message_ = false;
    bool peer_closed_ = false, closed_ = false;
    std::string error_;
};

}  // namespace

std::unique_ptr<Transport> make_ring_transport(std::unique_ptr<RdmaLink> link,
                                               const RingOptions& opts) {
    if (!link) throw Error("make_ring_transport: no link");
    return std::make_unique<RingTransport>(std::move(link), opts);
}

}  // namespace tandem::net
