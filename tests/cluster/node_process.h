#pragma once
// A tandem-node process for cluster tests: started with arguments, its output in a log file,
// its port read from the line it prints, killed (SIGKILL) when the handle goes away.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fixtures.h"

namespace tandem::test {

// Arguments of a worker in static mode (a shared secret, no pairing) on a free cluster port,
// with one thread and its shard cache in `cache`; `models`: a folder of model files it has
// (empty: none, every shard is streamed to it). Its port line is "cluster port ".
inline std::vector<std::string> static_node_args(const std::string& secret,
                                                 const std::string& cache,
                                                 const std::string& models = "") {
    std::vector<std::string> a = {"serve",
                                  "--static-only",
                                  "--cluster-port",
                                  "0",
                                  "--cluster-secret",
                                  secret,
                                  "--threads",
                                  "1",
                                  "--shard-cache",
                                  cache};
    if (!models.empty()) {
        a.push_back("--models");
        a.push_back(models);
    }
    return a;
}

class NodeProcess {
  public:
    // Starts bin/tandem-node with `args` and waits (up to 30 s) for a line starting with
    // `port_line` ("cluster port ", "node ... serving on TCP port ") to read the port.
    NodeProcess(const std::vector<std::string>& args, const std::string& port_line) {
        log_ = temp_dir("cluster-node") / ("node-" + std::to_string(counter()++) + ".log");
        const std::string exe = (bin_dir() / "tandem-node").string();
        pid_ = ::fork();
        if (pid_ == 0) {
            FILE* f = std::fopen(log_.c_str(), "w");
            if (f) {
                ::dup2(fileno(f), 1);
                ::dup2(fileno(f), 2);
            }
            std::vector<char*> argv{const_cast<char*>(exe.c_str())};
            for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            ::execv(exe.c_str(), argv.data());
            ::_exit(127);
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (std::chrono::steady_clock::now() < deadline) {
            std::ifstream in(log_);
            std::string line;
            while (std::getline(in, line)) {
                auto p = line.find(port_line);
                if (p != std::string::npos) {
                    port_ = static_cast<uint16_t>(std::stoi(line.substr(p + port_line.size())));
                    return;
                }
            }
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        ADD_FAILURE() << "tandem-node did not start: " << log();
    }
    ~NodeProcess() { kill(SIGKILL); }
    NodeProcess(const NodeProcess&) = delete;
    NodeProcess& operator=(const NodeProcess&) = delete;

    void kill(int sig) {
        if (pid_ <= 0) return;
        ::kill(pid_, sig);
        if (sig == SIGKILL) {
            ::waitpid(pid_, nullptr, 0);
            pid_ = -1;
        }
    }
    uint16_t port() const { return port_; }
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
    std::string log() const {
        std::ifstream in(log_);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

  private:
    static int& counter() {
        static int n = 0;
        return n;
    }
    pid_t pid_ = -1;
    uint16_t port_ = 0;
    std::filesystem::path log_;
};

}  // namespace tandem::test
