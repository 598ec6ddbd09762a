#pragma once
// Runs tests/library/hf_test_server.py (a local Hugging Face stand-in with fault injection) on
// 127.0.0.1 for the duration of a test. See the script's docstring for the endpoints.
#include <sys/types.h>

#include <filesystem>
#include <string>

#include "tandem/library/http.h"

namespace tandem::test {

class TestHub {
  public:
    // Starts the server over `root`; throws when Python or the script is missing.
    explicit TestHub(std::filesystem::path root);
    // HTTPS with this certificate and key (PEM); http() trusts the certificate.
    TestHub(std::filesystem::path root, std::filesystem::path tls_cert,
            std::filesystem::path tls_key);
    ~TestHub();
    TestHub(const TestHub&) = delete;
    TestHub& operator=(const TestHub&) = delete;

    std::string url() const {
        return (tls_cert_.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") +
               std::to_string(port_);
    }
    int port() const { return port_; }
    const std::filesystem::path& root() const { return root_; }
    library::HttpOptions http() const;  // endpoint = url(), short timeouts

    void kill();     // SIGKILL, as a crash or a pulled cable would
    void restart();  // a new server on the same port (kill first when running)

    // GET /_control/<what>?<query>; returns the JSON answer's text.
    std::string control(const std::string& what, const std::string& query = "");
    // Injects a fault, e.g. fault("kind=cut&after=100000&match=a.bin&times=1").
    void fault(const std::string& query) { control("fault", query); }
    void reset() { control("reset"); }
    uint64_t bytes_served();  // body bytes of files sent since the last reset

    // Writes `size` deterministic pseudo-random bytes to <root>/<repo>/<path>.
    std::filesystem::path make_file(const std::string& repo, const std::string& path, uint64_t size,
                                    uint32_t seed);

  private:
    void start(int port);
    std::filesystem::path root_;
    std::filesystem::path tls_cert_, tls_key_;
    pid_t pid_ = -1;
    int port_ = 0;
};

// The Python that runs the server (the test venv when present, else /usr/bin/python3).
std::string server_python();

}  // namespace tandem::test
