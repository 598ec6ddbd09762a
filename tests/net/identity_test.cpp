// Identity files: 0600 on disk, refused when group/world readable, stable node id; peers.json.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fixtures.h"
#include "tandem/net/identity.h"
#include "tandem/net/peer_store.h"

namespace fs = std::filesystem;
using namespace tandem::net;

TEST(NetIdentity, CreatedWith0600AndReloadsToSameNodeId) {
    fs::path home = tandem::test::temp_dir("net-identity") / "home";
    Identity a = Identity::load_or_create(home);
    struct stat st {};
    ASSERT_EQ(::stat((home / "identity").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat(home.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    Identity b = Identity::load_or_create(home);
    EXPECT_EQ(a.node_id(), b.node_id());
    EXPECT_EQ(a.public_keys(), b.public_keys());
    EXPECT_EQ(a.node_id().size(), 32u);
    EXPECT_EQ(a.node_id().find_first_not_of("abcdefghijklmnopqrstuvwxyz234567"), std::string::npos);
    EXPECT_NE(Identity::generate().node_id(), a.node_id());
}

TEST(NetIdentity, RefusesGroupOrWorldReadableFile) {
    fs::path home = tandem::test::temp_dir("net-identity-perm") / "home";
    Identity::load_or_create(home);
    fs::path file = home / "identity";
    ::chmod(file.c_str(), 0644);
    try {
        Identity::load(file);
        FAIL() << "a 0644 identity was accepted";
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("0644"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("chmod 600"), std::string::npos) << e.what();
    }
    ::chmod(file.c_str(), 0640);
    EXPECT_THROW(Identity::load(file), tandem::Error);
    ::chmod(file.c_str(), 0600);
    EXPECT_NO_THROW(Identity::load(file));
    // A 0600 file that another user owns (they could rewrite it) is refused too.
    if (::geteuid() == 0 && ::chown(file.c_str(), 65534, 65534) == 0) {
        try {
            Identity::load(file);
            FAIL() << "an identity owned by another user was accepted";
        } catch (const tandem::Error& e) {
            EXPECT_NE(std::string(e.what()).find("owned by uid 65534"), std::string::npos)
                << e.what();
        }
    }
}

TEST(NetIdentity, CorruptFileGivesClearError) {
    fs::path dir = tandem::test::temp_dir("net-identity-bad");
    fs::path file = dir / "identity";
    { std::ofstream(file) << "{\"format\": \"tandem-identity-1\", \"ed25519_seed\": \"zz\"}"; }
    ::chmod(file.c_str(), 0600);
    try {
        Identity::load(file);
        FAIL();
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("ed25519_seed"), std::string::npos) << e.what();
    }
}

TEST(NetIdentity, SignatureVerifiesOnlyForSignedBytes) {
    Identity id = Identity::generate();
    std::vector<uint8_t> msg = {1, 2, 3};
    Signature sig = id.sign(msg);
    EXPECT_TRUE(verify_signature(id.public_keys().sign_pk, msg, sig));
    msg[0] ^= 1;
    EXPECT_FALSE(verify_signature(id.public_keys().sign_pk, msg, sig));
}

TEST(NetPeerStore, AddFindRemoveAndPermissions) {
    fs::path file = tandem::test::temp_dir("net-peers") / "home" / "peers.json";
    PeerStore store(file);
    EXPECT_TRUE(store.list().empty());
    Identity a = Identity::generate(), b = Identity::generate();
    store.add({a.node_id(), "alpha", a.public_keys(), 1, "10.0.0.1:47401"});
    store.add({b.node_id(), "beta", b.public_keys(), 2, ""});
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);

    PeerStore other(file);  // another process's view: reads the file
    ASSERT_TRUE(other.find(a.node_id()));
    EXPECT_EQ(other.find(a.node_id())->name, "alpha");
    ASSERT_TRUE(other.find_by_kx(b.public_keys().kx_pk));
    EXPECT_EQ(other.find_by_kx(b.public_keys().kx_pk)->node_id, b.node_id());
    EXPECT_TRUE(other.remove(a.node_id()));
    EXPECT_FALSE(other.remove(a.node_id()));
    EXPECT_FALSE(store.find(a.node_id()));
    EXPECT_EQ(store.list().size(), 1u);

    PairedPeer forged{a.node_id(), "x", b.public_keys(), 0, ""};
    EXPECT_THROW(store.add(forged), tandem::Error);
    ::chmod(file.c_str(), 0666);
    EXPECT_THROW(store.list(), tandem::Error);
}
