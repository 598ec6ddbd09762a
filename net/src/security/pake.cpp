// CPace on ristretto255 with key confirmation; see pairing.h for the message flow.
#include <sodium.h>

#include <cstring>

#include "tandem/net/net_version.h"
#include "tandem/net/pairing.h"
#include "tandem/net/record.h"

namespace tandem::net {

namespace {

constexpr char kGeneratorDst[] = "Tandem-CPace-ristretto255-v1";
constexpr char kTranscriptDst[] = "Tandem-pairing-transcript-v1";

void append(std::vector<uint8_t>& v, std::span<const uint8_t> b) {
    v.insert(v.end(), b.begin(), b.end());
}
void append_keys(std::vector<uint8_t>& v, const PublicKeys& k) {
    append(v, k.sign_pk);
    append(v, k.kx_pk);
}

// The session's generator: depends on the code, both nonces (fresh per session) and both
// parties' public keys, so a point from one session or one pair of keys is useless in another.
Key32 derive_generator(const std::string& code, const Nonce32& nonce_i, const Nonce32& nonce_r,
                       const PublicKeys& keys_i, const PublicKeys& keys_r) {
    std::vector<uint8_t> in;
    in.insert(in.end(), kGeneratorDst, kGeneratorDst + sizeof kGeneratorDst - 1);
    in.push_back(uint8_t(code.size()));
    in.insert(in.end(), code.begin(), code.end());
    append(in, nonce_i);
    append(in, nonce_r);
    append_keys(in, keys_i);
    append_keys(in, keys_r);
    uint8_t h[crypto_hash_sha512_BYTES];
    crypto_hash_sha512(h, in.data(), in.size());
    Key32 g;
    crypto_core_ristretto255_from_hash(g.data(), h);
    sodium_memzero(in.data(), in.size());
    return g;
}

struct ConfirmKeys {
    std::array<uint8_t, 64> transcript{};
    Mac32 key_i{}, key_r{};
};

// Both MAC keys come from the shared point K and the hash of every byte exchanged (hello, reply
// with Y, and X): changing any of them, including either party's public keys, changes the keys.
ConfirmKeys derive_confirm_keys(const Key32& shared, std::span<const uint8_t> hello,
                                std::span<const uint8_t> reply, const Key32& x_point) {
    ConfirmKeys out;
    crypto_generichash_state st;
    crypto_generichash_init(&st, nullptr, 0, 64);
    crypto_generichash_update(&st, reinterpret_cast<const uint8_t*>(kTranscriptDst),
                              sizeof kTranscriptDst - 1);
    uint8_t len[4];
    for (auto part : {hello, reply}) {
        uint32_t n = uint32_t(part.size());
        len[0] = uint8_t(n >> 24), len[1] = uint8_t(n >> 16), len[2] = uint8_t(n >> 8),
        len[3] = uint8_t(n);
        crypto_generichash_update(&st, len, 4);
        crypto_generichash_update(&st, part.data(), part.size());
    }
    crypto_generichash_update(&st, x_point.data(), x_point.size());
    crypto_generichash_final(&st, out.transcript.data(), out.transcript.size());

    uint8_t isk[64];
    crypto_generichash(isk, sizeof isk, out.transcript.data(), out.transcript.size(), shared.data(),
                       shared.size());
    crypto_generichash(out.key_i.data(), 32, reinterpret_cast<const uint8_t*>("confirm-initiator"),
                       17, isk, 64);
    crypto_generichash(out.key_r.data(), 32, reinterpret_cast<const uint8_t*>("confirm-responder"),
                       17, isk, 64);
    sodium_memzero(isk, sizeof isk);
    return out;
}

Mac32 mac(const Mac32& key, std::span<const uint8_t> transcript, uint8_t role) {
    Mac32 out;
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key.data(), key.size());
    crypto_auth_hmacsha256_update(&st, transcript.data(), transcript.size());
    crypto_auth_hmacsha256_update(&st, &role, 1);
    crypto_auth_hmacsha256_final(&st, out.data());
    return out;
}

void check_version(uint32_t theirs, const char* who) {
    if (theirs != kProtocolVersion)
        throw RefusedError(RefusalCode::VersionMismatch,
                           std::string("pairing: ") + who + " speaks protocol " +
                               std::to_string(theirs) + ", this node speaks " +
                               std::to_string(kProtocolVersion));
}

}  // namespace

PakeInitiator::PakeInitiator(const Identity& self, std::string name, const std::string& code)
    : self_(self), name_(std::move(name)), code_(normalize_pairing_code(code)) {
    ensure_sodium();
}

PakeInitiator::~PakeInitiator() {
    sodium_memzero(scalar_.data(), scalar_.size());
    sodium_memzero(code_.data(), code_.size());
}

std::vector<uint8_t> PakeInitiator::hello() {
    if (step_ != 0) throw Error("pairing: hello() called twice");
    randombytes_buf(nonce_.data(), nonce_.size());
    hello_bytes_ = encode(PairHello{kProtocolVersion, self_.public_keys(), name_, nonce_});
    step_ = 1;
    return hello_bytes_;
}

std::vector<uint8_t> PakeInitiator::on_reply(std::span<const uint8_t> body) {
    if (step_ != 1) throw Error("pairing: unexpected reply");
    reply_ = parse_pair_reply(body);
    check_version(reply_.protocol_version, "the joining node");
    if (reply_.keys == self_.public_keys())
        throw PairingFailed("pairing: the other node has this node's own keys");
    Key32 g = derive_generator(code_, nonce_, reply_.nonce, self_.public_keys(), reply_.keys);
    crypto_core_ristretto255_scalar_random(scalar_.data());
    PairConfirm confirm;
    if (crypto_scalarmult_ristretto255(confirm.point.data(), scalar_.data(), g.data()) != 0)
        throw PairingFailed("pairing: could not derive a point");
    Key32 shared;
    if (crypto_scalarmult_ristretto255(shared.data(), scalar_.data(), reply_.point.data()) != 0)
        throw PairingFailed("pairing: the joining node sent an invalid point");
    std::vector<uint8_t> reply_bytes(body.begin(), body.end());
    ConfirmKeys ck = derive_confirm_keys(shared, hello_bytes_, reply_bytes, confirm.point);
    sodium_memzero(shared.data(), shared.size());
    confirm.mac = mac(ck.key_i, ck.transcript, 'I');
    mac_key_r_ = ck.key_r;
    transcript_ = ck.transcript;
    step_ = 2;
    return encode(confirm);
}

PairedWith PakeInitiator::on_result(std::span<const uint8_t> body) {
    if (step_ != 2) throw Error("pairing: unexpected result");
    PairResult res = parse_pair_result(body);
    Mac32 want = mac(mac_key_r_, transcript_, 'R');
    step_ = 3;
    if (crypto_verify_32(want.data(), res.mac.data()) != 0)
        throw PairingFailed(
            "pairing: the joining node's confirmation does not verify (wrong code or a "
            "man-in-the-middle changed the exchange)");
    return PairedWith{reply_.keys, node_id_of(reply_.keys), reply_.name};
}

PakeResponder::PakeResponder(const Identity& self, std::string name, const std::string& code)
    : self_(self), name_(std::move(name)), code_(normalize_pairing_code(code)) {
    ensure_sodium();
}

PakeResponder::~PakeResponder() {
    sodium_memzero(scalar_.data(), scalar_.size());
    sodium_memzero(code_.data(), code_.size());
}

std::vector<uint8_t> PakeResponder::on_hello(std::span<const uint8_t> body) {
    if (step_ != 0) throw Error("pairing: unexpected hello");
    PairHello hello = parse_pair_hello(body);
    check_version(hello.protocol_version, "the coordinator");
    if (hello.keys == self_.public_keys())
        throw Error("pairing: the coordinator has this node's own keys");
    hello_bytes_.assign(body.begin(), body.end());
    peer_ = PairedWith{hello.keys, node_id_of(hello.keys), hello.name};
    PairReply reply{kProtocolVersion, self_.public_keys(), name_, {}, {}};
    randombytes_buf(reply.nonce.data(), reply.nonce.size());
    generator_ = derive_generator(code_, hello.nonce, reply.nonce, hello.keys, self_.public_keys());
    crypto_core_ristretto255_scalar_random(scalar_.data());
    if (crypto_scalarmult_ristretto255(reply.point.data(), scalar_.data(), generator_.data()) != 0)
        throw Error("pairing: could not derive a point");
    reply_bytes_ = encode(reply);
    step_ = 1;
    return reply_bytes_;
}

std::optional<std::vector<uint8_t>> PakeResponder::on_confirm(std::span<const uint8_t> body) {
    if (step_ != 1) throw Error("pairing: unexpected confirm");
    step_ = 2;
    PairConfirm confirm = parse_pair_confirm(body);
    Key32 shared;
    if (crypto_scalarmult_ristretto255(shared.data(), scalar_.data(), confirm.point.data()) != 0)
        return std::nullopt;  // not a valid point, or the identity: treated like a wrong code
    ConfirmKeys ck = derive_confirm_keys(shared, hello_bytes_, reply_bytes_, confirm.point);
    sodium_memzero(shared.data(), shared.size());
    Mac32 want = mac(ck.key_i, ck.transcript, 'I');
    if (crypto_verify_32(want.data(), confirm.mac.data()) != 0) return std::nullopt;
    return encode(PairResult{mac(ck.key_r, ck.transcript, 'R')});
}

}  // namespace tandem::net
