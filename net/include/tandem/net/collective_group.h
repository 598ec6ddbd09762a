#pragma once
// tandem::Collective over one Transport per peer: what AllReduce / AllGather nodes of a
// tensor-parallel step call on each rank.
//
// All-reduce, small messages: a direct exchange. Every rank sends its whole vector to every peer
// and sums the contributions in rank order (x0 + x1 + ...), so every rank ends with bit-identical
// results (the ranks' next layers then stay in lock-step). For 2-4 ranks and decode-size messages
// this is the latency floor.
// All-reduce, large messages (>= ring_min_bytes on the wire): a ring, reduce-scatter then
// all-gather, each rank sending 2(n-1)/n of the vector instead of (n-1) times it. Segment k is
// summed in ring order starting at rank k ((x_k + x_k+1) + ... + x_k-1) and then copied to every
// rank, so results are again bit-identical on every rank; with 2 ranks both orders give the same
// bits (a + b == b + a). With a bf16 wire the partial sums travel as bf16 and the result is
// rounded to bf16 on every rank.
#include <chrono>
#include <memory>
#include <vector>

#include "tandem/backend/collective.h"
#include "tandem/net/transport.h"

namespace tandem::net {

enum class WireType { F32, BF16 };
enum class AllReduceAlgo { Auto, Direct, Ring };

class AsyncSender;

struct CollectiveOptions {
    WireType wire = WireType::F32;
    // A peer that does not answer within this fails the step with an error naming it.
    Millis timeout{2000};
    // Auto: the ring from this many bytes on the wire per rank (3-4 ranks; measured crossover,
    // docs/cluster.md), the direct exchange below it and always for 2 ranks.
    AllReduceAlgo all_reduce = AllReduceAlgo::Auto;
    size_t ring_min_bytes = size_t(128) << 10;
};

class TransportCollective : public Collective {
  public:
    // peers[k]: the transport to rank k, nullptr at `rank`.
    TransportCollective(int rank, std::vector<std::unique_ptr<Transport>> peers,
                        CollectiveOptions opts = {});
    ~TransportCollective() override;
    int rank() const override { return rank_; }
    int n_ranks() const override { return static_cast<int>(peers_.size()); }
    void all_reduce_sum(float* data, size_t n) override;
    void all_gather(const float* local, size_t n, std::vector<float>& all,
                    std::vector<size_t>& sizes) override;
    // Rank `root`'s bytes end up in `data` on every rank (data is resized on the others).
    void broadcast(std::vector<uint8_t>& data, int root);
    // Closes every transport: peers see ClosedError on their next receive.
    void close();

    uint64_t bytes_sent() const { return bytes_sent_; }
    // Takes effect from the next collective; every rank must make the same change.
    void set_options(const CollectiveOptions& opts) { opts_ = opts; }

  private:
    void encode(const float* data, size_t n);
    void decode_into(const std::vector<uint8_t>& msg, size_t n, std::vector<float>& out, int from);
    void exchange(int peer, const char* what);
    bool use_ring(size_t n) const;
    void ring_all_reduce(float* data, size_t n);
    [[noreturn]] void fail(int peer, const char* what, const std::exception& e);

    int rank_;
    std::vector<std::unique_ptr<Transport>> peers_;
    CollectiveOptions opts_;
    std::vector<uint8_t> send_buf_;
    std::vector<std::vector<uint8_t>> recv_bufs_;  // by rank
    std::vector<std::vector<float>> parts_;        // by rank, decoded
    std::vector<float> ring_acc_;  // ring: this rank's contribution, then partial sums
    std::unique_ptr<AsyncSender> sender_;
    uint64_t bytes_sent_ = 0;
};

}  // namespace tandem::net
