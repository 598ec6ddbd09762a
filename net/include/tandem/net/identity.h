#pragma once
// The long-term identity of one Tandem installation: an Ed25519 signing key (signs beacons) and
// an X25519 key (authenticates channels). The node id is derived from both public keys, so a
// node id cannot be claimed without holding the keys behind it.
#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "tandem/net/wire.h"

namespace tandem::net {

using Signature = std::array<uint8_t, 64>;

struct PublicKeys {
    Key32 sign_pk{};  // Ed25519
    Key32 kx_pk{};    // X25519
    bool operator==(const PublicKeys&) const = default;
};

// base32 (RFC 4648 alphabet, lower case, no padding) of the first 20 bytes of
// BLAKE2b-256(sign_pk || kx_pk): 32 characters.
std::string node_id_of(const PublicKeys& keys);
// A short form for log lines and the UI ("k3x9-7q2m").
std::string short_id(const std::string& node_id);

// $TANDEM_HOME, else $XDG_DATA_HOME/tandem, else ~/.local/share/tandem.
std::filesystem::path default_home();

bool verify_signature(const Key32& sign_pk, std::span<const uint8_t> message, const Signature& sig);

class Identity {
  public:
    // A fresh random identity (not saved).
    static Identity generate();
    // Loads <dir>/identity, creating it (and dir, 0700) on first use.
    static Identity load_or_create(const std::filesystem::path& dir);
    // Refuses a file that group or others can read, or that another user owns.
    static Identity load(const std::filesystem::path& file);
    void save(const std::filesystem::path& file) const;  // 0600

    Identity(const Identity&) = default;
    Identity& operator=(const Identity&) = default;
    ~Identity();

    const PublicKeys& public_keys() const { return pub_; }
    const std::string& node_id() const { return node_id_; }
    Signature sign(std::span<const uint8_t> message) const;
    const Key32& kx_secret() const { return kx_sk_; }

  private:
    Identity() = default;
    void finish();
    std::array<uint8_t, 64> sign_sk_{};
    Key32 kx_sk_{};
    PublicKeys pub_;
    std::string node_id_;
};

// Calls sodium_init once; throws if libsodium cannot start.
void ensure_sodium();

}  // namespace tandem::net
