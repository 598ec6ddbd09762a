// Fuzzes the frame decoder as a receiver sees it: a byte stream cut into header + body frames
// and opened in order with a fixed key (seeds are frames sealed with that key, so the fuzzer
// also reaches the paths after a frame authenticates).
#include "fuzz_seeds.h"
#include "tandem/net/frame.h"

using namespace tandem::net;

namespace {
Key32 fixed_key() {
    Key32 k;
    k.fill(0x42);
    return k;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    FrameSealer s(fixed_key());
    std::vector<uint8_t> stream;
    for (size_t n : {0, 1, 100, 3000}) {
        auto f = s.seal(std::vector<uint8_t>(n, uint8_t(n)));
        stream.insert(stream.end(), f.begin(), f.end());
        if (n == 1) fuzz::write_seed("two-frames", stream);
    }
    fuzz::write_seed("four-frames", stream);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FrameOpener o(fixed_key(), 1 << 16);
    size_t pos = 0;
    try {
        while (size - pos >= kFrameHeader) {
            std::span<const uint8_t, kFrameHeader> header(data + pos, kFrameHeader);
            size_t len = o.body_length(header);
            if (len > size - pos - kFrameHeader) break;
            auto plain = o.open(header, {data + pos + kFrameHeader, len});
            if (plain.size() + kFrameTag != len) __builtin_trap();
            pos += kFrameHeader + len;
        }
    } catch (const tandem::Error&) {
    }
    return 0;
}
