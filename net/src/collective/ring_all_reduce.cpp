// Ring all-reduce for large messages: reduce-scatter then all-gather over the ring
// rank -> rank + 1 (mod n), n - 1 steps each. Every step sends one segment to the right
// neighbour (on the helper thread) while receiving one from the left.
//
// Segment k = elements [n_elem * k / R, n_elem * (k + 1) / R) of R ranks. Reduce-scatter step s:
// rank r sends segment (r - s) mod R and adds the incoming segment (r - s - 1) mod R to its own
// contribution, so segment k is summed in the order x_k, x_k+1, ..., x_k-1 and ends complete on
// rank k - 1. All-gather step s: rank r passes on segment (r + 1 - s) mod R, copying the incoming
// one into place. Each final segment exists once and is copied, so all ranks hold the same bits.
#include <cstring>

#include "collective/async_sender.h"
#include "tandem/net/collective_group.h"
#include "tandem/quant/fp16.h"

namespace tandem::net {
namespace {

size_t seg_begin(size_t n, int k, int ranks) {
    return n * static_cast<size_t>(k) / static_cast<size_t>(ranks);
}

}  // namespace

bool TransportCollective::use_ring(size_t n) const {
    if (opts_.all_reduce == AllReduceAlgo::Ring) return true;
    if (opts_.all_reduce == AllReduceAlgo::Direct || n_ranks() <= 2) return false;
    const size_t width = opts_.wire == WireType::F32 ? 4 : 2;
    return n * width >= opts_.ring_min_bytes;
}

void TransportCollective::ring_all_reduce(float* data, size_t n) {
    const int R = n_ranks();
    const int right = (rank_ + 1) % R, left = (rank_ + R - 1) % R;
    if (!sender_) sender_ = std::make_unique<AsyncSender>();
    auto seg = [&](int k) {
        k = ((k % R) + R) % R;
        const size_t b = seg_begin(n, k, R);
        return std::pair<size_t, size_t>{b, seg_begin(n, k + 1, R) - b};
    };
    // Our contribution as the wire carries it (bf16-rounded on a bf16 wire), as for direct.
    encode(data, n);
    decode_into(send_buf_, n, ring_acc_, rank_);
    // One step: send segment `out_k` of ring_acc_, receive segment `in_k` into recv_bufs_[left].
    auto step = [&](int out_k, int in_k, const char* what) {
        const auto [ob, on] = seg(out_k);
        encode(ring_acc_.data() + ob, on);
        sender_->start(*peers_[right], send_buf_, opts_.timeout);
        std::exception_ptr recv_error;
        try {
            peers_[left]->recv(recv_bufs_[left], opts_.timeout);
        } catch (...) {
            recv_error = std::current_exception();
        }
        try {
            sender_->finish();
        } catch (const std::exception& e) {
            fail(right, what, e);
        }
        bytes_sent_ += send_buf_.size();
        if (recv_error) {
            try {
                std::rethrow_exception(recv_error);
            } catch (const std::exception& e) {
                fail(left, what, e);
            }
        }
        decode_into(recv_bufs_[left], seg(in_k).second, parts_[left], left);
    };
    for (int s = 0; s < R - 1; ++s) {
        step(rank_ - s, rank_ - s - 1, "all-reduce (ring reduce-scatter)");
        const auto [b, len] = seg(rank_ - s - 1);
        const float* in = parts_[left].data();
        for (size_t i = 0; i < len; ++i) ring_acc_[b + i] = in[i] + ring_acc_[b + i];
    }
    if (opts_.wire == WireType::BF16) {  // the others receive our segment rounded: round ours
        const auto [b, len] = seg(rank_ + 1);
        for (size_t i = 0; i < len; ++i)
            ring_acc_[b + i] = quant::bf16_to_fp32(quant::fp32_to_bf16(ring_acc_[b + i]));
    }
    for (int s = 0; s < R - 1; ++s) {
        step(rank_ + 1 - s, rank_ - s, "all-reduce (ring all-gather)");
        const auto [b, len] = seg(rank_ - s);
        std::memcpy(ring_acc_.data() + b, parts_[left].data(), len * sizeof(float));
    }
    std::memcpy(data, ring_acc_.data(), n * sizeof(float));
}

}  // namespace tandem::net
