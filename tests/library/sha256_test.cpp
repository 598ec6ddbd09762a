// SHA-256 against the FIPS 180-2 test vectors.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "fixtures.h"
#include "tandem/library/sha256.h"

using namespace tandem::library;

TEST(Sha256, FipsVectors) {
    Sha256 a;
    a.update("abc", 3);
    EXPECT_EQ(a.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    Sha256 e;
    EXPECT_EQ(e.hex_digest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    // One million 'a' fed in uneven pieces, through a file.
    auto dir = tandem::test::temp_dir("sha");
    {
        std::ofstream f(dir / "a.bin", std::ios::binary);
        f << std::string(1000000, 'a');
    }
    EXPECT_EQ(sha256_file(dir / "a.bin"),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
