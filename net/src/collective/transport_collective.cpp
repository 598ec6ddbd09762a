// Direct-exchange collectives over one transport per peer.
//
// Pairs exchange in a fixed global order (pair (i, j) before (i, j+1) on every rank), the lower
// rank sending first, so no two ranks ever wait on each other: deadlock-free for any message
// size without a second thread.
#include <cstring>

#include "collective/async_sender.h"
#include "tandem/net/collective_group.h"
#include "tandem/quant/fp16.h"

namespace tandem::net {

TransportCollective::TransportCollective(int rank, std::vector<std::unique_ptr<Transport>> peers,
                                         CollectiveOptions opts)
    : rank_(rank), peers_(std::move(peers)), opts_(opts) {
    const int n = n_ranks();
    if (rank_ < 0 || rank_ >= n) throw Error("TransportCollective: rank outside the group");
    for (int k = 0; k < n; ++k)
        if ((k == rank_) != (peers_[k] == nullptr))
            throw Error("TransportCollective: peer " + std::to_string(k) +
                        (k == rank_ ? " (ourselves) must be null" : " has no transport"));
    recv_bufs_.resize(static_cast<size_t>(n));
    parts_.resize(static_cast<size_t>(n));
}

TransportCollective::~TransportCollective() = default;

void TransportCollective::encode(const float* data, size_t n) {
    if (opts_.wire == WireType::F32) {
        send_buf_.resize(n * 4);
        std::memcpy(send_buf_.data(), data, n * 4);
        return;
    }
    send_buf_.resize(n * 2);
    auto* out = reinterpret_cast<uint16_t*>(send_buf_.data());
    for (size_t i = 0; i < n; ++i) out[i] = quant::fp32_to_bf16(data[i]);
}

void TransportCollective::decode_into(const std::vector<uint8_t>& msg, size_t n,
                                      std::vector<float>& out, int from) {
    const size_t width = opts_.wire == WireType::F32 ? 4 : 2;
    if (n != size_t(-1) && msg.size() != n * width)
        throw Error("cluster: rank " + std::to_string(from) + " sent " +
                    std::to_string(msg.size()) + " bytes, expected " + std::to_string(n * width) +
                    " (ranks out of step?)");
    if (msg.size() % width)
        throw Error("cluster: rank " + std::to_string(from) + " sent a torn vector");
    const size_t count = msg.size() / width;
    out.resize(count);
    if (width == 4) {
        std::memcpy(out.data(), msg.data(), count * 4);
        return;
    }
    const auto* in = reinterpret_cast<const uint16_t*>(msg.data());
    for (size_t i = 0; i < count; ++i) out[i] = quant::bf16_to_fp32(in[i]);
}

void TransportCollective::fail(int peer, const char* what, const std::exception& e) {
    std::string reason = e.what();
    if (dynamic_cast<const TimeoutError*>(&e))
        reason = "no answer within " + std::to_string(opts_.timeout.count()) + " ms";
    else if (dynamic_cast<const ClosedError*>(&e))
        reason = "it closed the connection (node stopped?)";
    throw Error("cluster: " + std::string(what) + " failed: rank " + std::to_string(peer) + " (" +
                peers_[peer]->describe() + "): " + reason);
}

void TransportCollective::exchange(int peer, const char* what) {
    try {
        if (rank_ < peer) {
            peers_[peer]->send(send_buf_, opts_.timeout);
            peers_[peer]->recv(recv_bufs_[peer], opts_.timeout);
        } else {
            peers_[peer]->recv(recv_bufs_[peer], opts_.timeout);
            peers_[peer]->send(send_buf_, opts_.timeout);
        }
    } catch (const std::exception& e) {
        fail(peer, what, e);
    }
    bytes_sent_ += send_buf_.size();
}

void TransportCollective::all_reduce_sum(float* data, size_t n) {
    const int nr = n_ranks();
    if (nr == 1) return;
    if (use_ring(n)) return ring_all_reduce(data, n);
    encode(data, n);
    // Our own contribution goes through the same rounding as the others' (bf16 wire), so every
    // rank sums identical values.
    decode_into(send_buf_, n, parts_[rank_], rank_);
    for (int k = 0; k < nr; ++k)
        if (k != rank_) exchange(k, "all-reduce");
    for (int k = 0; k < nr; ++k)
        if (k != rank_) decode_into(recv_bufs_[k], n, parts_[k], k);
    for (size_t i = 0; i < n; ++i) {
        float s = parts_[0][i];
        for (int k = 1; k < nr; ++k) s += parts_[k][i];  // rank order on every rank
        data[i] = s;
    }
}

void TransportCollective::all_gather(const float* local, size_t n, std::vector<float>& all,
                                     std::vector<size_t>& sizes) {
    const int nr = n_ranks();
    encode(local, n);
    decode_into(send_buf_, n, parts_[rank_], rank_);
    for (int k = 0; k < nr; ++k)
        if (k != rank_) exchange(k, "all-gather");
    all.clear();
    sizes.clear();
    for (int k = 0; k < nr; ++k) {
        if (k != rank_) decode_into(recv_bufs_[k], size_t(-1), parts_[k], k);
        all.insert(all.end(), parts_[k].begin(), parts_[k].end());
        sizes.push_back(parts_[k].size());
    }
}

void TransportCollective::broadcast(std::vector<uint8_t>& data, int root) {
    if (root < 0 || root >= n_ranks()) throw Error("cluster: broadcast root outside the group");
    if (rank_ == root) {
        for (int k = 0; k < n_ranks(); ++k) {
            if (k == rank_) continue;
            try {
                peers_[k]->send(data, opts_.timeout);
            } catch (const std::exception& e) {
                fail(k, "broadcast", e);
            }
            bytes_sent_ += data.size();
        }
        return;
    }
    try {
        peers_[root]->recv(data, opts_.timeout);
    } catch (const std::exception& e) {
        fail(root, "broadcast", e);
    }
}

void TransportCollective::close() {
    for (auto& p : peers_)
        if (p) p->close();
}

}  // namespace tandem::net
