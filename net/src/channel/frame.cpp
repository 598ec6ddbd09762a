#include "tandem/net/frame.h"

#include <sodium.h>

#include "tandem/net/identity.h"

namespace tandem::net {

namespace {
std::array<uint8_t, 12> counter_nonce(uint64_t n) {
    std::array<uint8_t, 12> nonce{};
    for (int i = 0; i < 8; ++i) nonce[4 + i] = uint8_t(n >> (8 * i));
    return nonce;
}
}  // namespace

FrameSealer::FrameSealer(const Key32& key) : key_(key) {
    ensure_sodium();
}
FrameSealer::~FrameSealer() {
    sodium_memzero(key_.data(), key_.size());
}

std::vector<uint8_t> FrameSealer::seal(std::span<const uint8_t> plain) {
    if (plain.size() > 0xffffffffu - kFrameTag) throw Error("frame: message too large");
    if (counter_ == UINT64_MAX) throw Error("frame: counter exhausted; reconnect");
    size_t body = plain.size() + kFrameTag;
    std::vector<uint8_t> out(kFrameHeader + body);
    out[0] = uint8_t(body >> 24), out[1] = uint8_t(body >> 16), out[2] = uint8_t(body >> 8),
    out[3] = uint8_t(body);
    auto nonce = counter_nonce(counter_++);
    unsigned long long clen = 0;
    crypto_aead_chacha20poly1305_ietf_encrypt(out.data() + kFrameHeader, &clen, plain.data(),
                                              plain.size(), out.data(), kFrameHeader, nullptr,
                                              nonce.data(), key_.data());
    return out;
}

FrameOpener::FrameOpener(const Key32& key, size_t max_message)
    : key_(key), max_message_(max_message) {
    ensure_sodium();
}
FrameOpener::~FrameOpener() {
    sodium_memzero(key_.data(), key_.size());
}

size_t FrameOpener::body_length(std::span<const uint8_t, kFrameHeader> h) const {
    size_t len = size_t(h[0]) << 24 | size_t(h[1]) << 16 | size_t(h[2]) << 8 | size_t(h[3]);
    if (len < kFrameTag)
        throw Error("frame: body of " + std::to_string(len) + " bytes is shorter than its tag");
    if (len - kFrameTag > max_message_)
        throw Error("frame: message of " + std::to_string(len - kFrameTag) +
                    " bytes exceeds the limit of " + std::to_string(max_message_));
    return len;
}

std::vector<uint8_t> FrameOpener::open(std::span<const uint8_t, kFrameHeader> header,
                                       std::span<const uint8_t> body) {
    if (body.size() != body_length(header))
        throw Error("frame: body length does not match its header");
    std::vector<uint8_t> plain(body.size() - kFrameTag);
    auto nonce = counter_nonce(counter_);
    unsigned long long plen = 0;
    if (crypto_aead_chacha20poly1305_ietf_decrypt(plain.data(), &plen, nullptr, body.data(),
                                                  body.size(), header.data(), kFrameHeader,
                                                  nonce.data(), key_.data()) != 0)
        throw Error("frame " + std::to_string(counter_) +
                    ": authentication failed (tampered, replayed or reordered frame)");
    ++counter_;
    return plain;
}

}  // namespace tandem::net
