#include "tandem/net/handshake.h"

#include <sodium.h>

#include <cstring>

#include "tandem/net/net_version.h"
#include "tandem/net/wire.h"

namespace tandem::net {

namespace {

constexpr char kProtocolName[] = "Tandem_KK+confirm_25519_ChaChaPoly_BLAKE2b_v1";
constexpr uint8_t kFirst = 1, kSecond = 2, kThird = 3;
constexpr size_t kTag = crypto_aead_chacha20poly1305_ietf_ABYTES;

Key32 dh(const Key32& sk, const Key32& pk) {
    Key32 out;
    // libsodium refuses low-order points (all-zero output): a peer cannot force a known secret.
    if (crypto_scalarmult(out.data(), sk.data(), pk.data()) != 0)
        throw HandshakeFailed("handshake: peer sent a low-order X25519 key");
    return out;
}

void keypair(Key32& sk, Key32& pk) {
    randombytes_buf(sk.data(), sk.size());
    crypto_scalarmult_base(pk.data(), sk.data());
}

std::array<uint8_t, 12> nonce_of(uint64_t n) {
    std::array<uint8_t, 12> nonce{};
    for (int i = 0; i < 8; ++i) nonce[4 + i] = uint8_t(n >> (8 * i));
    return nonce;
}

// The clear part of message 1 goes into the hash, so changing the version or the claimed
// static key breaks the AEAD tag.
void mix_prologue(SymmetricState& ss, uint32_t version) {
    uint8_t p[9] = {'T',
                    'N',
                    'D',
                    'C',
                    kFirst,
                    uint8_t(version >> 24),
                    uint8_t(version >> 16),
                    uint8_t(version >> 8),
                    uint8_t(version)};
    ss.mix_hash(p);
}

void keyed_hash(Key32& out, const Key32& key, std::span<const uint8_t> a, uint8_t label) {
    crypto_generichash_state st;
    crypto_generichash_init(&st, key.data(), key.size(), out.size());
    crypto_generichash_update(&st, a.data(), a.size());
    crypto_generichash_update(&st, &label, 1);
    crypto_generichash_final(&st, out.data(), out.size());
}

}  // namespace

SymmetricState::SymmetricState(std::string_view protocol_name) {
    ensure_sodium();
    crypto_generichash(h_.data(), h_.size(), reinterpret_cast<const uint8_t*>(protocol_name.data()),
                       protocol_name.size(), nullptr, 0);
    ck_ = h_;
}

SymmetricState::~SymmetricState() {
    sodium_memzero(ck_.data(), ck_.size());
    sodium_memzero(k_.data(), k_.size());
}

void SymmetricState::mix_hash(std::span<const uint8_t> data) {
    crypto_generichash_state st;
    crypto_generichash_init(&st, nullptr, 0, h_.size());
    crypto_generichash_update(&st, h_.data(), h_.size());
    crypto_generichash_update(&st, data.data(), data.size());
    crypto_generichash_final(&st, h_.data(), h_.size());
}

void SymmetricState::mix_key(std::span<const uint8_t> ikm) {
    Key32 next_ck, next_k;
    keyed_hash(next_ck, ck_, ikm, 1);
    keyed_hash(next_k, ck_, ikm, 2);
    ck_ = next_ck;
    k_ = next_k;
    sodium_memzero(next_k.data(), next_k.size());
    n_ = 0;
    has_key_ = true;
}

std::vector<uint8_t> SymmetricState::encrypt_and_hash(std::span<const uint8_t> plain) {
    if (!has_key_) throw Error("handshake: encrypt before a key was mixed");
    std::vector<uint8_t> c(plain.size() + kTag);
    auto nonce = nonce_of(n_++);
    unsigned long long clen = 0;
    crypto_aead_chacha20poly1305_ietf_encrypt(c.data(), &clen, plain.data(), plain.size(),
                                              h_.data(), h_.size(), nullptr, nonce.data(),
                                              k_.data());
    mix_hash(c);
    return c;
}

std::vector<uint8_t> SymmetricState::decrypt_and_hash(std::span<const uint8_t> c,
                                                      const char* what) {
    if (!has_key_) throw Error("handshake: decrypt before a key was mixed");
    if (c.size() < kTag)
        throw HandshakeFailed(std::string("handshake: ") + what + ": ciphertext too short");
    std::vector<uint8_t> p(c.size() - kTag);
    auto nonce = nonce_of(n_++);
    unsigned long long plen = 0;
    if (crypto_aead_chacha20poly1305_ietf_decrypt(p.data(), &plen, nullptr, c.data(), c.size(),
                                                  h_.data(), h_.size(), nonce.data(),
                                                  k_.data()) != 0)
        throw HandshakeFailed(std::string("handshake: ") + what);
    mix_hash(c);
    return p;
}

std::pair<Key32, Key32> SymmetricState::split() const {
    Key32 a, b;
    keyed_hash(a, ck_, {}, 1);
    keyed_hash(b, ck_, {}, 2);
    return {a, b};
}

HandshakeFirstHeader peek_handshake_first(std::span<const uint8_t> body) {
    WireReader r(body, "handshake message 1");
    if (uint8_t t = r.u8("type"); t != kFirst)
        r.fail("type", "expected 1, got " + std::to_string(t));
    HandshakeFirstHeader h;
    h.protocol_version = r.u32("protocol_version");
    h.initiator_static = r.fixed<32>("static key");
    h.initiator_ephemeral = r.fixed<32>("ephemeral key");
    if (r.remaining() != kTag)
        r.fail("tag",
               "expected " + std::to_string(kTag) + " bytes, got " + std::to_string(r.remaining()));
    return h;
}

HandshakeInitiator::HandshakeInitiator(const Identity& self, const Key32& responder_static)
    : self_(self), rs_(responder_static), ss_(kProtocolName) {}

HandshakeInitiator::~HandshakeInitiator() {
    sodium_memzero(e_sk_.data(), e_sk_.size());
}

std::vector<uint8_t> HandshakeInitiator::first() {
    if (step_ != 0) throw Error("handshake: first() called twice");
    keypair(e_sk_, e_pk_);
    mix_prologue(ss_, kProtocolVersion);
    ss_.mix_hash(self_.public_keys().kx_pk);
    ss_.mix_hash(rs_);
    ss_.mix_hash(e_pk_);
    ss_.mix_key(dh(e_sk_, rs_));              // es
    ss_.mix_key(dh(self_.kx_secret(), rs_));  // ss
    auto tag = ss_.encrypt_and_hash({});
    WireWriter w;
    w.u8(kFirst);
    w.u32(kProtocolVersion);
    w.bytes(self_.public_keys().kx_pk);
    w.bytes(e_pk_);
    w.bytes(tag);
    step_ = 1;
    return w.take();
}

std::vector<uint8_t> HandshakeInitiator::on_second(std::span<const uint8_t> body) {
    if (step_ != 1) throw Error("handshake: unexpected message 2");
    step_ = 2;
    WireReader r(body, "handshake message 2");
    if (uint8_t t = r.u8("type"); t != kSecond)
        r.fail("type", "expected 2, got " + std::to_string(t));
    Key32 re = r.fixed<32>("ephemeral key");
    auto tag = r.take(kTag, "tag");
    r.expect_end();
    ss_.mix_hash(re);
    ss_.mix_key(dh(e_sk_, re));              // ee
    ss_.mix_key(dh(self_.kx_secret(), re));  // se
    ss_.decrypt_and_hash(tag,
                         "the responder did not prove the pinned key (not the paired node, or "
                         "the message was tampered with)");
    auto confirm = ss_.encrypt_and_hash({});
    auto [k1, k2] = ss_.split();
    keys_ = SessionKeys{k1, k2, ss_.hash()};
    WireWriter w;
    w.u8(kThird);
    w.bytes(confirm);
    return w.take();
}

HandshakeResponder::HandshakeResponder(const Identity& self, const Key32& initiator_static)
    : self_(self), rs_(initiator_static), ss_(kProtocolName) {}

HandshakeResponder::~HandshakeResponder() {
    sodium_memzero(e_sk_.data(), e_sk_.size());
}

std::vector<uint8_t> HandshakeResponder::on_first(std::span<const uint8_t> body) {
    if (step_ != 0) throw Error("handshake: unexpected message 1");
    step_ = 1;
    HandshakeFirstHeader h = peek_handshake_first(body);
    if (h.protocol_version != kProtocolVersion)
        throw Error("handshake: peer speaks protocol " + std::to_string(h.protocol_version) +
                    ", this node " + std::to_string(kProtocolVersion));
    if (h.initiator_static != rs_)
        throw HandshakeFailed("handshake: message 1 names another static key");
    re_ = h.initiator_ephemeral;
    mix_prologue(ss_, h.protocol_version);
    ss_.mix_hash(rs_);
    ss_.mix_hash(self_.public_keys().kx_pk);
    ss_.mix_hash(re_);
    ss_.mix_key(dh(self_.kx_secret(), re_));  // es
    ss_.mix_key(dh(self_.kx_secret(), rs_));  // ss
    ss_.decrypt_and_hash(body.last(kTag),
                         "message 1 does not verify (the peer holds other keys than the "
                         "paired ones, or the message was tampered with)");
    keypair(e_sk_, e_pk_);
    ss_.mix_hash(e_pk_);
    ss_.mix_key(dh(e_sk_, re_));  // ee
    ss_.mix_key(dh(e_sk_, rs_));  // se
    auto tag = ss_.encrypt_and_hash({});
    WireWriter w;
    w.u8(kSecond);
    w.bytes(e_pk_);
    w.bytes(tag);
    return w.take();
}

void HandshakeResponder::on_third(std::span<const uint8_t> body) {
    if (step_ != 1) throw Error("handshake: unexpected message 3");
    step_ = 2;
    WireReader r(body, "handshake message 3");
    if (uint8_t t = r.u8("type"); t != kThird)
        r.fail("type", "expected 3, got " + std::to_string(t));
    auto tag = r.take(kTag, "tag");
    r.expect_end();
    ss_.decrypt_and_hash(tag, "message 3 does not verify (a replayed or forged handshake)");
    auto [k1, k2] = ss_.split();
    keys_ = SessionKeys{k2, k1, ss_.hash()};
}

bool ReplayCache::first_use(const Key32& e) {
    std::lock_guard g(mutex_);
    if (!seen_.insert(e).second) return false;
    order_.push_back(e);
    if (order_.size() > capacity_) {
        seen_.erase(order_.front());
        order_.pop_front();
    }
    return true;
}

}  // namespace tandem::net
