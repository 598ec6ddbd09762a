// Fuzzes what an unauthenticated peer can send before a channel exists: record headers,
// refusals, and the three channel handshake messages through both state machines.
#include "fuzz_seeds.h"
#include "tandem/net/handshake.h"
#include "tandem/net/record.h"

using namespace tandem::net;

namespace {
struct Keys {
    Identity a = Identity::generate();
    Identity b = Identity::generate();
};
const Keys& keys() {
    static Keys k;
    return k;
}
std::vector<uint8_t> with_selector(uint8_t sel, const std::vector<uint8_t>& body) {
    std::vector<uint8_t> s = {sel};
    s.insert(s.end(), body.begin(), body.end());
    return s;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    HandshakeInitiator i(keys().a, keys().b.public_keys().kx_pk);
    HandshakeResponder r(keys().b, keys().a.public_keys().kx_pk);
    auto m1 = i.first();
    auto m2 = r.on_first(m1);
    auto m3 = i.on_second(m2);
    fuzz::write_seed("m1", with_selector(0, m1));
    fuzz::write_seed("m2", with_selector(1, m2));
    fuzz::write_seed("m3", with_selector(2, m3));
    fuzz::write_seed("refusal",
                     with_selector(3, encode_refusal({RefusalCode::NotPaired, "not paired"})));
    fuzz::write_seed("header", with_selector(4, {'T', 'N', 'D', 'C', 0, 85}));
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    std::span<const uint8_t> body(data + 1, size - 1);
    const Keys& k = keys();
    try {
        switch (data[0] % 5) {
            case 0: {
                (void)peek_handshake_first(body);
                HandshakeResponder r(k.b, k.a.public_keys().kx_pk);
                r.on_first(body);
                break;
            }
            case 1: {
                HandshakeInitiator i(k.a, k.b.public_keys().kx_pk);
                i.first();
                i.on_second(body);
                break;
            }
            case 2: {
                HandshakeInitiator i(k.a, k.b.public_keys().kx_pk);
                HandshakeResponder r(k.b, k.a.public_keys().kx_pk);
                r.on_first(i.first());
                r.on_third(body);
                break;
            }
            case 3:
                (void)parse_refusal(body);
                break;
            case 4:
                if (body.size() >= 6)
                    (void)parse_record_header(std::span<const uint8_t, 6>(body.data(), 6));
                break;
        }
    } catch (const tandem::Error&) {
    }
    return 0;
}
