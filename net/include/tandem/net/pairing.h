#pragma once
// Pairing: the joining node shows a one-time code, the coordinator's user types it, and a CPace
// exchange on ristretto255 turns the code into a shared key that only the two code holders can
// compute. Both sides then prove the key with MACs over a transcript that includes both
// long-term public keys, so a relay that swaps keys, or anyone without the code, fails, and a
// transcript gives nothing to test code guesses against offline. (CPace: draft-irtf-cfrg-cpace.)
//
//   coordinator (initiator)                joining node (responder, shows the code)
//   hello   {version, keys, name, nonce_i}  ->
//                                         <-  reply {version, keys, name, nonce_r, Y = y*G}
//   confirm {X = x*G, mac_i}              ->
//                                         <-  result {mac_r}      (or a Refusal: wrong code)
//   G = ristretto255_from_hash(SHA-512(dst, code, nonce_i, nonce_r, keys_i, keys_r))
#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tandem/net/identity.h"

namespace tandem::net {

using Nonce32 = std::array<uint8_t, 32>;
using Mac32 = std::array<uint8_t, 32>;

// Messages (bodies of Pairing records). Parsers throw tandem::Error on any malformed input.
struct PairHello {
    uint32_t protocol_version = 0;
    PublicKeys keys;
    std::string name;
    Nonce32 nonce{};
};
struct PairReply {
    uint32_t protocol_version = 0;
    PublicKeys keys;
    std::string name;
    Nonce32 nonce{};
    Key32 point{};  // Y
};
struct PairConfirm {
    Key32 point{};  // X
    Mac32 mac{};
};
struct PairResult {
    Mac32 mac{};
};
std::vector<uint8_t> encode(const PairHello& m);
std::vector<uint8_t> encode(const PairReply& m);
std::vector<uint8_t> encode(const PairConfirm& m);
std::vector<uint8_t> encode(const PairResult& m);
PairHello parse_pair_hello(std::span<const uint8_t> body);
PairReply parse_pair_reply(std::span<const uint8_t> body);
PairConfirm parse_pair_confirm(std::span<const uint8_t> body);
PairResult parse_pair_result(std::span<const uint8_t> body);

// Codes are 8 decimal digits shown as "1234-5678". normalize() accepts spaces and dashes and
// throws on anything else.
std::string generate_pairing_code();
std::string normalize_pairing_code(std::string_view typed);
std::string format_pairing_code(const std::string& digits);

// What a successful exchange pins.
struct PairedWith {
    PublicKeys keys;
    std::string node_id;
    std::string name;
};

// Thrown when the other side's key confirmation fails (wrong code, tampering, or a relay).
class PairingFailed : public Error {
  public:
    using Error::Error;
};

class PakeInitiator {
  public:
    PakeInitiator(const Identity& self, std::string name, const std::string& code);
    ~PakeInitiator();
    std::vector<uint8_t> hello();
    std::vector<uint8_t> on_reply(std::span<const uint8_t> reply);  // -> confirm
    PairedWith on_result(std::span<const uint8_t> result);          // throws PairingFailed

  private:
    const Identity& self_;
    std::string name_, code_;
    std::vector<uint8_t> hello_bytes_;
    Nonce32 nonce_{};
    std::array<uint8_t, 32> scalar_{};
    PairReply reply_;
    Mac32 mac_key_r_{};
    std::array<uint8_t, 64> transcript_{};
    int step_ = 0;
};

class PakeResponder {
  public:
    PakeResponder(const Identity& self, std::string name, const std::string& code);
    ~PakeResponder();
    // Throws on a malformed hello or another protocol version.
    std::vector<uint8_t> on_hello(std::span<const uint8_t> hello);  // -> reply
    // Returns the result message when the initiator proved the code, nullopt when its MAC is
    // wrong (wrong code, or a relay changed the transcript).
    std::optional<std::vector<uint8_t>> on_confirm(std::span<const uint8_t> confirm);
    const PairedWith& peer() const { return peer_; }

  private:
    const Identity& self_;
    std::string name_, code_;
    std::vector<uint8_t> hello_bytes_, reply_bytes_;
    std::array<uint8_t, 32> scalar_{};
    Key32 generator_{};
    PairedWith peer_;
    int step_ = 0;
};

// The joining node's current code: one-time, expiring, and burnt after max_attempts wrong
// tries; after that, pairing is locked for `lockout` before a new code appears, so online
// guessing runs at a few guesses per minute against 10^8 codes. Thread-safe.
struct PairingPolicy {
    std::chrono::seconds lifetime{300};
    int max_attempts = 5;
    std::chrono::seconds lockout{60};
};

class PairingGate {
  public:
    explicit PairingGate(PairingPolicy policy = {});
    // The code to show now (a fresh one when the last expired or was used); nullopt while
    // locked out.
    std::optional<std::string> current_code();
    // Starts an attempt: the code to check against, or nullopt with *why set (locked, busy).
    // Only one attempt runs at a time.
    std::optional<std::string> begin_attempt(std::string* why);
    enum class Outcome { Paired, WrongCode, Aborted };  // Aborted: no code was tested
    void end_attempt(Outcome outcome);
    int attempts_left() const;
    // Makes a new code at once (the user asked for one), ending any lockout.
    std::string renew();

  private:
    void refresh_locked(std::chrono::steady_clock::time_point now);
    PairingPolicy policy_;
    mutable std::mutex mutex_;
    std::string code_;
    std::chrono::steady_clock::time_point expires_{}, locked_until_{};
    int failures_ = 0;
    bool busy_ = false;
};

}  // namespace tandem::net
