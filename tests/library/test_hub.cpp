#include "test_hub.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fixtures.h"

extern char** environ;

namespace tandem::test {

std::string server_python() {
    auto p = python();
    if (!p.empty()) return p;
    return "/usr/bin/python3";
}

TestHub::TestHub(std::filesystem::path root) : root_(std::move(root)) {
    std::filesystem::create_directories(root_);
    start(0);
}

TestHub::TestHub(std::filesystem::path root, std::filesystem::path tls_cert,
                 std::filesystem::path tls_key)
    : root_(std::move(root)), tls_cert_(std::move(tls_cert)), tls_key_(std::move(tls_key)) {
    std::filesystem::create_directories(root_);
    start(0);
}

TestHub::~TestHub() {
    kill();
}

void TestHub::start(int port) {
    auto script = source_dir() / "tests" / "library" / "hf_test_server.py";
    if (!std::filesystem::exists(script)) throw std::runtime_error("missing " + script.string());
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    std::string py = server_python(), root = root_.string(), port_s = std::to_string(port);
    std::string script_s = script.string();
    std::string a1 = "--root", a2 = "--port";
    std::string a3 = "--tls", cert = tls_cert_.string(), key = tls_key_.string();
    std::vector<char*> args{py.data(),   script_s.data(), a1.data(),
                            root.data(), a2.data(),       port_s.data()};
    if (!tls_cert_.empty()) {
        args.push_back(a3.data());
        args.push_back(cert.data());
        args.push_back(key.data());
    }
    args.push_back(nullptr);
    int rc = posix_spawn(&pid_, py.c_str(), &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    if (rc != 0) {
        ::close(fds[0]);
        throw std::runtime_error("cannot start " + py);
    }
    // "PORT <n>" once listening; a restart may wait for the old socket to go.
    FILE* f = ::fdopen(fds[0], "r");
    char line[64] = {};
    bool ok =
        std::fgets(line, sizeof line, f) != nullptr && std::sscanf(line, "PORT %d", &port_) == 1;
    std::fclose(f);
    if (!ok) {
        kill();
        throw std::runtime_error("test server did not start (port " + port_s + ")");
    }
}

void TestHub::kill() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        int st = 0;
        ::waitpid(pid_, &st, 0);
        pid_ = -1;
    }
}

void TestHub::restart() {
    kill();
    int port = port_;
    for (int i = 0; i < 50; ++i) {
        try {
            start(port);
            return;
        } catch (const std::runtime_error&) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
    throw std::runtime_error("test server did not restart on port " + std::to_string(port));
}

library::HttpOptions TestHub::http() const {
    library::HttpOptions o;
    o.endpoint = url();
    o.connect_timeout_s = 5;
    if (!tls_cert_.empty()) o.ca_bundle = tls_cert_.string();
    return o;
}

std::string TestHub::control(const std::string& what, const std::string& query) {
    auto r =
        library::http_get(url() + "/_control/" + what + (query.empty() ? "" : "?" + query), http());
    if (r.status != 200)
        throw std::runtime_error("control " + what + ": HTTP " + std::to_string(r.status));
    return r.body;
}

uint64_t TestHub::bytes_served() {
    auto j = nlohmann::json::parse(control("stats"));
    return j["stats"]["bytes"].get<uint64_t>();
}

std::filesystem::path TestHub::make_file(const std::string& repo, const std::string& path,
                                         uint64_t size, uint32_t seed) {
    auto p = root_ / repo / path;
    std::filesystem::create_directories(p.parent_path());
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> buf(1 << 16);
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    uint64_t left = size;
    while (left > 0) {
        for (auto& w : buf) w = rng();
        uint64_t n = std::min<uint64_t>(left, buf.size() * 8);
        out.write(reinterpret_cast<const char*>(buf.data()), std::streamsize(n));
        left -= n;
    }
    if (!out.flush()) throw std::runtime_error("cannot write " + p.string());
    return p;
}

}  // namespace tandem::test
