#include "tandem/net/identity.h"

#include <sodium.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "security/hex.h"
#include "security/private_file.h"
#include "tandem/common/error.h"

namespace tandem::net {

namespace fs = std::filesystem;

void ensure_sodium() {
    static const int rc = sodium_init();
    if (rc < 0) throw Error("libsodium failed to initialise");
}

std::string node_id_of(const PublicKeys& keys) {
    ensure_sodium();
    uint8_t both[64];
    std::copy(keys.sign_pk.begin(), keys.sign_pk.end(), both);
    std::copy(keys.kx_pk.begin(), keys.kx_pk.end(), both + 32);
    uint8_t digest[32];
    crypto_generichash(digest, sizeof digest, both, sizeof both, nullptr, 0);
    // 20 bytes = 160 bits = exactly 32 base32 digits, so no padding is needed.
    static const char* alphabet = "abcdefghijklmnopqrstuvwxyz234567";
    std::string id;
    uint64_t acc = 0;
    int bits = 0;
    for (int i = 0; i < 20; ++i) {
        acc = (acc << 8) | digest[i];
        bits += 8;
        while (bits >= 5) {
            id.push_back(alphabet[(acc >> (bits - 5)) & 31]);
            bits -= 5;
        }
    }
    return id;
}

std::string short_id(const std::string& node_id) {
    if (node_id.size() < 8) return node_id;
    return node_id.substr(0, 4) + "-" + node_id.substr(4, 4);
}

fs::path default_home() {
    if (const char* h = std::getenv("TANDEM_HOME"); h && *h) return fs::path(h);
    if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return fs::path(x) / "tandem";
    const char* home = std::getenv("HOME");
    if (!home || !*home)
        throw Error("neither TANDEM_HOME nor HOME is set; cannot locate the identity");
    return fs::path(home) / ".local" / "share" / "tandem";
}

bool verify_signature(const Key32& sign_pk, std::span<const uint8_t> message,
                      const Signature& sig) {
    ensure_sodium();
    return crypto_sign_verify_detached(sig.data(), message.data(), message.size(),
                                       sign_pk.data()) == 0;
}

Identity::~Identity() {
    sodium_memzero(sign_sk_.data(), sign_sk_.size());
    sodium_memzero(kx_sk_.data(), kx_sk_.size());
}

void Identity::finish() {
    crypto_sign_ed25519_sk_to_pk(pub_.sign_pk.data(), sign_sk_.data());
    crypto_scalarmult_base(pub_.kx_pk.data(), kx_sk_.data());
    node_id_ = node_id_of(pub_);
}

Identity Identity::generate() {
    ensure_sodium();
    Identity id;
    Key32 pk;
    crypto_sign_keypair(pk.data(), id.sign_sk_.data());
    randombytes_buf(id.kx_sk_.data(), id.kx_sk_.size());
    id.finish();
    return id;
}

Identity Identity::load(const fs::path& file) {
    ensure_sodium();
    std::string text = read_private_file(file, "identity");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
        throw Error("identity file " + file.string() + ": not valid JSON: " + e.what());
    }
    if (!j.is_object() || j.value("format", "") != "tandem-identity-1")
        throw Error("identity file " + file.string() +
                    ": missing \"format\": \"tandem-identity-1\"");
    auto field = [&](const char* name, size_t len) {
        if (!j.contains(name) || !j[name].is_string())
            throw Error("identity file " + file.string() + ": missing string field '" + name + "'");
        return from_hex(j[name].get<std::string>(), len,
                        "identity file " + file.string() + ": '" + name + "'");
    };
    Identity id;
    auto seed = field("ed25519_seed", 32);
    auto kx = field("x25519_secret", 32);
    Key32 pk;
    crypto_sign_seed_keypair(pk.data(), id.sign_sk_.data(), seed.data());
    std::copy(kx.begin(), kx.end(), id.kx_sk_.begin());
    sodium_memzero(seed.data(), seed.size());
    sodium_memzero(kx.data(), kx.size());
    id.finish();
    if (j.contains("node_id") && j["node_id"] != id.node_id_)
        throw Error("identity file " + file.string() + ": stored node_id does not match its keys");
    return id;
}

void Identity::save(const fs::path& file) const {
    uint8_t seed[32];
    crypto_sign_ed25519_sk_to_seed(seed, sign_sk_.data());
    nlohmann::json j = {{"format", "tandem-identity-1"},
                        {"node_id", node_id_},
                        {"ed25519_seed", to_hex(seed)},
                        {"x25519_secret", to_hex(kx_sk_)}};
    sodium_memzero(seed, sizeof seed);
    std::string text = j.dump(2) + "\n";
    write_private_file(file, text);
    sodium_memzero(text.data(), text.size());
}

Identity Identity::load_or_create(const fs::path& dir) {
    fs::path file = dir / "identity";
    std::error_code ec;
    if (fs::exists(file, ec)) return load(file);
    ensure_private_dir(dir);
    Identity id = generate();
    id.save(file);
    return id;
}

Signature Identity::sign(std::span<const uint8_t> message) const {
    Signature sig;
    crypto_sign_detached(sig.data(), nullptr, message.data(), message.size(), sign_sk_.data());
    return sig;
}

}  // namespace tandem::net
