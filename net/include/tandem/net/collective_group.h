#pragma once
// tandem::Collective over one Transport per peer: what AllReduce / AllGather nodes of a
// tensor-parallel step call on each rank.
//
// All-reduce is a direct exchange: every rank sends its whole vector to every peer and sums the
// contributions in rank order, so every rank ends with bit-identical results (the ranks' next
// layers then stay in lock-step). For 2-4 ranks and decode-size messages this is one round trip,
// the latency floor; a ring (reduce-scatter + all-gather) only wins for large messages and is
// left for later (docs/cluster.md).
#include <chrono>
#include <memory>
#include <vector>

#include "tandem/backend/collective.h"
#include "tandem/net/transport.h"

namespace tandem::net {

enum class WireType { F32, BF16 };

struct CollectiveOptions {
    WireType wire = WireType::F32;
    // A peer that does not answer within this fails the step with an error naming it.
    Millis timeout{2000};
};

class TransportCollective : public Collective {
  public:
    // peers[k]: the transport to rank k, nullptr at `rank`.
    TransportCollective(int rank, std::vector<std::unique_ptr<Transport>> peers,
                        CollectiveOptions opts = {});
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

  private:
    void encode(const float* data, size_t n);
    void decode_into(const std::vector<uint8_t>& msg, size_t n, std::vector<float>& out, int from);
    void exchange(int peer, const char* what);
    [[noreturn]] void fail(int peer, const char* what, const std::exception& e);

    int rank_;
    std::vector<std::unique_ptr<Transport>> peers_;
    CollectiveOptions opts_;
    std::vector<uint8_t> send_buf_;
    std::vector<std::vector<uint8_t>> recv_bufs_;  // by rank
    std::vector<std::vector<float>> parts_;        // by rank, decoded
    uint64_t bytes_sent_ = 0;
};

}  // namespace tandem::net
