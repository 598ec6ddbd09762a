// Fuzzes the pairing messages: the four parsers, and a joining node's PAKE state machine fed a
// hello and then a confirm cut from the input.
#include "fuzz_seeds.h"
#include "tandem/net/pairing.h"

using namespace tandem::net;

namespace {
const Identity& joiner() {
    static Identity id = Identity::generate();
    return id;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    Identity coord = Identity::generate();
    PakeInitiator i(coord, "coord", "12345678");
    PakeResponder r(joiner(), "joiner", "12345678");
    auto hello = i.hello();
    auto reply = r.on_hello(hello);
    auto confirm = i.on_reply(reply);
    // Input layout: 1 selector byte, 2-byte split point, then the bytes.
    auto seed = [](uint8_t sel, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
        std::vector<uint8_t> s = {sel, uint8_t(a.size() >> 8), uint8_t(a.size())};
        s.insert(s.end(), a.begin(), a.end());
        s.insert(s.end(), b.begin(), b.end());
        return s;
    };
    fuzz::write_seed("hello-confirm", seed(0, hello, confirm));
    fuzz::write_seed("reply", seed(1, reply, {}));
    fuzz::write_seed("confirm", seed(2, confirm, {}));
    fuzz::write_seed("result", seed(3, std::vector<uint8_t>(33, 4), {}));
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 3) return 0;
    uint8_t sel = data[0];
    size_t split = std::min<size_t>(size_t(data[1]) << 8 | data[2], size - 3);
    std::span<const uint8_t> a(data + 3, split), b(data + 3 + split, size - 3 - split);
    try {
        switch (sel % 5) {
            case 0: {
                PakeResponder r(joiner(), "joiner", "12345678");
                r.on_hello(a);
                (void)r.on_confirm(b);
                break;
            }
            case 1:
                (void)parse_pair_reply(a);
                break;
            case 2:
                (void)parse_pair_confirm(a);
                break;
            case 3:
                (void)parse_pair_result(a);
                break;
            case 4:
                (void)normalize_pairing_code(
                    std::string_view(reinterpret_cast<const char*>(a.data()), a.size()));
                break;
        }
    } catch (const tandem::Error&) {
    }
    return 0;
}
