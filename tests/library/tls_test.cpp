// TLS verification is on: a hub with a certificate nobody vouches for is refused with a clear
// error (and not retried), and the same hub works once its certificate is trusted (ca_bundle).
#include <gtest/gtest.h>

#include <cstdlib>

#include "fixtures.h"
#include "tandem/common/error.h"
#include "tandem/library/downloader.h"
#include "tandem/library/hf_client.h"
#include "test_hub.h"

using namespace tandem::library;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(Tls, UntrustedCertificateIsRefusedTrustedOneWorks) {
    auto dir = tandem::test::temp_dir("tls");
    const auto cert = dir / "cert.pem", key = dir / "key.pem";
    std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
        "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -days 1 -keyout '" +
        key.string() + "' -out '" + cert.string() + "' 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "openssl command not available";
    tandem::test::TestHub hub(dir / "hub", cert, key);
    hub.make_file("org/secure", "s-Q4_0.gguf", 300000, 8);

    auto trusted = hub.http();  // trusts cert.pem
    auto files = HfClient(trusted).list_files("org/secure");
    ASSERT_EQ(files.size(), 1u);

    auto untrusted = trusted;
    untrusted.ca_bundle.clear();
    try {
        HfClient(untrusted).list_files("org/secure");
        FAIL() << "a self-signed certificate was accepted";
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("certificate"), std::string::npos) << e.what();
    }

    DownloadRequest req;
    req.url = HfClient(trusted).resolve_url("org/secure", "main", "s-Q4_0.gguf");
    req.dest = dir / "out" / "s-Q4_0.gguf";
    req.expected_sha256 = files[0].sha256;
    DownloadOptions o;
    o.http = untrusted;
    o.backoff_initial = 200ms;
    o.reserve_bytes = 0;
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_THROW(download_file(req, o), tandem::Error);
    // Not retried: 8 attempts from a 200 ms backoff would take 25 s.
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_FALSE(fs::exists(req.dest));

    o.http = trusted;
    auto r = download_file(req, o);
    EXPECT_EQ(r.sha256, files[0].sha256);
}
