#include "tandem/net/pairing.h"
#include "tandem/net/wire.h"

namespace tandem::net {

namespace {
enum : uint8_t { kHello = 1, kReply = 2, kConfirm = 3, kResult = 4 };

void expect_type(WireReader& r, uint8_t want) {
    uint8_t t = r.u8("type");
    if (t != want)
        r.fail("type",
               "expected message type " + std::to_string(want) + ", got " + std::to_string(t));
}
void write_keys(WireWriter& w, const PublicKeys& k) {
    w.bytes(k.sign_pk);
    w.bytes(k.kx_pk);
}
PublicKeys read_keys(WireReader& r) {
    PublicKeys k;
    k.sign_pk = r.fixed<32>("ed25519 key");
    k.kx_pk = r.fixed<32>("x25519 key");
    return k;
}
// Hello and reply open alike: who speaks (version, keys, name) and its nonce.
template <class M>
void write_intro(WireWriter& w, uint8_t type, const M& m) {
    w.u8(type);
    w.u32(m.protocol_version);
    write_keys(w, m.keys);
    w.str8(m.name, "name");
    w.bytes(m.nonce);
}
template <class M>
void read_intro(WireReader& r, uint8_t type, M& m) {
    expect_type(r, type);
    m.protocol_version = r.u32("protocol_version");
    m.keys = read_keys(r);
    m.name = r.str8("name");
    m.nonce = r.fixed<32>("nonce");
}
}  // namespace

std::vector<uint8_t> encode(const PairHello& m) {
    WireWriter w;
    write_intro(w, kHello, m);
    return w.take();
}

std::vector<uint8_t> encode(const PairReply& m) {
    WireWriter w;
    write_intro(w, kReply, m);
    w.bytes(m.point);
    return w.take();
}

std::vector<uint8_t> encode(const PairConfirm& m) {
    WireWriter w;
    w.u8(kConfirm);
    w.bytes(m.point);
    w.bytes(m.mac);
    return w.take();
}

std::vector<uint8_t> encode(const PairResult& m) {
    WireWriter w;
    w.u8(kResult);
    w.bytes(m.mac);
    return w.take();
}

PairHello parse_pair_hello(std::span<const uint8_t> body) {
    WireReader r(body, "pairing hello");
    PairHello m;
    read_intro(r, kHello, m);
    r.expect_end();
    return m;
}

PairReply parse_pair_reply(std::span<const uint8_t> body) {
    WireReader r(body, "pairing reply");
    PairReply m;
    read_intro(r, kReply, m);
    m.point = r.fixed<32>("point");
    r.expect_end();
    return m;
}

PairConfirm parse_pair_confirm(std::span<const uint8_t> body) {
    WireReader r(body, "pairing confirm");
    expect_type(r, kConfirm);
    PairConfirm m;
    m.point = r.fixed<32>("point");
    m.mac = r.fixed<32>("mac");
    r.expect_end();
    return m;
}

PairResult parse_pair_result(std::span<const uint8_t> body) {
    WireReader r(body, "pairing result");
    expect_type(r, kResult);
    PairResult m;
    m.mac = r.fixed<32>("mac");
    r.expect_end();
    return m;
}

}  // namespace tandem::net
