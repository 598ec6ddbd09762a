#pragma once
// The channel handshake between two paired nodes: Noise KK (both static X25519 keys pinned at
// pairing) built from libsodium primitives, plus a third message by which the initiator proves
// it holds the ephemeral key of message 1. That makes a replayed message 1 worthless: the replayer
// cannot answer message 2, and the responder serves nobody before message 3 verifies.
//
//   -> version, s_i, e_i, AEAD(es, ss)        (s_i in clear: the responder picks the pinned key)
//   <- e_r, AEAD(ee, se)
//   -> AEAD(confirm)
//   keys: split(chaining key) into one ChaCha20-Poly1305 key per direction
//
// Sans-IO so the tests can replay, tamper and relay messages, and the fuzzers can feed them.
#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <span>
#include <vector>

#include "tandem/net/identity.h"

namespace tandem::net {

class HandshakeFailed : public Error {
  public:
    using Error::Error;
};

struct SessionKeys {
    Key32 send{};
    Key32 recv{};
    Key32 handshake_hash{};  // the same on both sides; binds the session to the transcript
};

// Noise's SymmetricState with BLAKE2b-256 (keyed BLAKE2b stands in for HKDF) and
// ChaCha20-Poly1305 (IETF).
class SymmetricState {
  public:
    explicit SymmetricState(std::string_view protocol_name);
    ~SymmetricState();
    void mix_hash(std::span<const uint8_t> data);
    void mix_key(std::span<const uint8_t> input_key_material);
    std::vector<uint8_t> encrypt_and_hash(std::span<const uint8_t> plain);
    // Throws HandshakeFailed when the tag does not verify.
    std::vector<uint8_t> decrypt_and_hash(std::span<const uint8_t> cipher, const char* what);
    std::pair<Key32, Key32> split() const;
    const Key32& hash() const { return h_; }

  private:
    Key32 ck_{}, h_{}, k_{};
    uint64_t n_ = 0;
    bool has_key_ = false;
};

struct HandshakeFirstHeader {
    uint32_t protocol_version = 0;
    Key32 initiator_static{};
    Key32 initiator_ephemeral{};
};
// Parses only the clear part of message 1 (throws on malformed input).
HandshakeFirstHeader peek_handshake_first(std::span<const uint8_t> body);

class HandshakeInitiator {
  public:
    HandshakeInitiator(const Identity& self, const Key32& responder_static);
    ~HandshakeInitiator();
    std::vector<uint8_t> first();
    // Verifies message 2 and returns message 3. Throws HandshakeFailed when the responder does
    // not hold the pinned key.
    std::vector<uint8_t> on_second(std::span<const uint8_t> body);
    const SessionKeys& keys() const { return keys_; }

  private:
    const Identity& self_;
    Key32 rs_{};
    Key32 e_sk_{}, e_pk_{};
    SymmetricState ss_;
    SessionKeys keys_;
    int step_ = 0;
};

class HandshakeResponder {
  public:
    // `initiator_static` is the pinned key of the paired peer named by message 1.
    HandshakeResponder(const Identity& self, const Key32& initiator_static);
    ~HandshakeResponder();
    // Throws HandshakeFailed when message 1 was not made with the pinned keys.
    std::vector<uint8_t> on_first(std::span<const uint8_t> body);
    // Throws HandshakeFailed when message 3 does not verify (a replayed or forged message 1).
    void on_third(std::span<const uint8_t> body);
    const SessionKeys& keys() const { return keys_; }

  private:
    const Identity& self_;
    Key32 rs_{};
    Key32 e_sk_{}, e_pk_{}, re_{};
    SymmetricState ss_;
    SessionKeys keys_;
    int step_ = 0;
};

// Remembers the initiator ephemeral keys of recent handshakes so a replayed message 1 is named
// as such in the log (message 3 stops it either way). Bounded; thread-safe.
class ReplayCache {
  public:
    explicit ReplayCache(size_t capacity = 65536) : capacity_(capacity) {}
    // True the first time `ephemeral` is seen, false for a replay.
    bool first_use(const Key32& ephemeral);

  private:
    size_t capacity_;
    std::mutex mutex_;
    std::set<Key32> seen_;
    std::deque<Key32> order_;
};

}  // namespace tandem::net
