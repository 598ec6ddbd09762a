// Checks our wire crypto against an independent implementation: Python's hashlib (BLAKE2b,
// base32) for node ids, and the `cryptography` package (OpenSSL) for beacon Ed25519 signatures,
// X25519 and ChaCha20-Poly1305 frames. Skips when python3 with `cryptography` is absent.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "tandem/net/beacon.h"
#include "tandem/net/frame.h"
#include "tandem/net/net_version.h"

using namespace tandem::net;

namespace {

std::string hex(std::span<const uint8_t> b) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (uint8_t x : b) s += {d[x >> 4], d[x & 15]};
    return s;
}

constexpr const char* kScript = R"PY(
import base64, hashlib, json, sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives import serialization
v = json.load(open(sys.argv[1]))
h = bytes.fromhex
# node id = base32(BLAKE2b-256(ed25519 || x25519)[:20]), lower case
digest = hashlib.blake2b(h(v["sign_pk"]) + h(v["kx_pk"]), digest_size=32).digest()
assert base64.b32encode(digest[:20]).decode().lower() == v["node_id"], "node id"
# beacon = body || Ed25519 signature over body; the keys sit at offsets 5 and 37
beacon = h(v["beacon"])
assert beacon[5:37] == h(v["sign_pk"]) and beacon[37:69] == h(v["kx_pk"]), "beacon keys"
Ed25519PublicKey.from_public_bytes(h(v["sign_pk"])).verify(beacon[-64:], beacon[:-64])
# the X25519 public key is the base-point multiple of the secret
pub = X25519PrivateKey.from_private_bytes(h(v["kx_sk"])).public_key().public_bytes(
    serialization.Encoding.Raw, serialization.PublicFormat.Raw)
assert pub == h(v["kx_pk"]), "x25519 public key"
# frames: u32 BE length, ChaCha20-Poly1305 with nonce = 4 zero bytes || u64 LE counter, AD = header
aead = ChaCha20Poly1305(h(v["frame_key"]))
for i, (frame, plain) in enumerate(zip(v["frames"], v["plains"])):
    f = h(frame)
    assert int.from_bytes(f[:4], "big") == len(f) - 4, "frame length"
    nonce = bytes(4) + i.to_bytes(8, "little")
    assert aead.decrypt(nonce, f[4:], f[:4]) == h(plain), "frame %d" % i
print("ok")
)PY";

}  // namespace

TEST(NetPythonReference, NodeIdBeaconSignatureAndFramesMatchIndependentCrypto) {
    if (std::system("python3 -c 'import cryptography' >/dev/null 2>&1") != 0)
        GTEST_SKIP()
            << "python3 with the `cryptography` package not found (pip install cryptography)";
    auto dir = tandem::test::temp_dir("net-pyref");
    Identity id = Identity::load_or_create(dir / "home");
    Beacon b;
    b.name = "ref";
    b.app_version = "0.1.0";
    b.protocol_version = kProtocolVersion;
    b.tcp_port = 47401;
    b.backends = {{"cpu", {{"cpu0", 1, 2}}}};
    auto beacon = encode_beacon(b, id);

    // The secret X25519 key is read back from the identity file, as a user's tools would.
    nlohmann::json idfile = nlohmann::json::parse(std::ifstream(dir / "home" / "identity"));
    Key32 key;
    for (size_t i = 0; i < key.size(); ++i) key[i] = uint8_t(i * 3 + 1);
    FrameSealer sealer(key);
    nlohmann::json v = {{"node_id", id.node_id()},
                        {"sign_pk", hex(id.public_keys().sign_pk)},
                        {"kx_pk", hex(id.public_keys().kx_pk)},
                        {"kx_sk", idfile["x25519_secret"]},
                        {"beacon", hex(beacon)},
                        {"frame_key", hex(key)},
                        {"frames", nlohmann::json::array()},
                        {"plains", nlohmann::json::array()}};
    for (const std::string& text :
         std::vector<std::string>{"", "a", std::string(1000, 'x'), "all-reduce"}) {
        std::vector<uint8_t> plain(text.begin(), text.end());
        v["frames"].push_back(hex(sealer.seal(plain)));
        v["plains"].push_back(hex(plain));
    }
    std::ofstream(dir / "vectors.json") << v.dump();
    std::ofstream(dir / "check.py") << kScript;
    std::string cmd =
        "python3 " + (dir / "check.py").string() + " " + (dir / "vectors.json").string() + " 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_TRUE(p);
    std::string out;
    char buf[512];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    int rc = ::pclose(p);
    EXPECT_EQ(WEXITSTATUS(rc), 0) << out;
    EXPECT_EQ(out, "ok\n");
}
