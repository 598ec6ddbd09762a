// Three tandem-node processes in their own network namespaces, joined by veth links to a bridge
// in a fourth: they discover each other by multicast (IPv4 and IPv6) within 3 s, drop a killed
// node within 10 s, pair with the right code, and refuse a wrong code and an unpaired peer.
// Needs root (CAP_NET_ADMIN); skips with a message otherwise. Namespaces are unique per run and
// removed on every exit path.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "fixtures.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

int sh(const std::string& cmd) {
    int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

struct Node {
    std::string ns, name, ip;
    fs::path home, state, log;
    pid_t pid = -1;
};

class Testbed {
  public:
    explicit Testbed(int n) {
        prefix_ = "tnd" + std::to_string(::getpid() % 100000);
        hub_ = prefix_ + "hub";
        dir_ = tandem::test::temp_dir("netns");
        for (int i = 0; i < n; ++i) {
            Node node;
            node.name = std::string(1, char('a' + i));
            node.ns = prefix_ + node.name;
            node.ip = "10.77.0." + std::to_string(i + 1);
            node.home = dir_ / node.name / "home";
            node.state = dir_ / node.name / "state.json";
            node.log = dir_ / node.name / "log.txt";
            fs::create_directories(dir_ / node.name);
            nodes.push_back(node);
        }
    }
    ~Testbed() {
        for (auto& n : nodes) stop(n, SIGKILL);
        for (auto& n : nodes) sh("ip netns del " + n.ns);
        sh("ip netns del " + hub_);
    }
    // False (with *why) when namespaces cannot be made here.
    bool build(std::string* why) {
        if (::geteuid() != 0) return *why = "needs root for ip netns", false;
        if (sh("ip netns add " + hub_) != 0)
            return *why = "ip netns add failed (no CAP_NET_ADMIN?)", false;
        if (sh("ip -n " + hub_ + " link add br0 type bridge mcast_snooping 0") != 0 ||
            sh("ip -n " + hub_ + " link set br0 up") != 0)
            return *why = "cannot create a bridge in a namespace", false;
        for (auto& n : nodes) {
            std::string v = "v" + n.name;
            bool ok =
                sh("ip netns add " + n.ns) == 0 &&
                sh("ip -n " + hub_ + " link add " + v + " type veth peer name eth0 netns " +
                   n.ns) == 0 &&
                sh("ip -n " + hub_ + " link set " + v + " master br0") == 0 &&
                sh("ip -n " + hub_ + " link set " + v + " up") == 0 &&
                sh("ip netns exec " + n.ns + " sysctl -qw net.ipv6.conf.eth0.accept_dad=0") == 0 &&
                sh("ip -n " + n.ns + " addr add " + n.ip + "/24 dev eth0") == 0 &&
                sh("ip -n " + n.ns + " link set eth0 up") == 0 &&
                sh("ip -n " + n.ns + " link set lo up") == 0 &&
                sh("ip -n " + n.ns + " route add 224.0.0.0/4 dev eth0") == 0;
            if (!ok) return *why = "cannot set up veth links for namespace " + n.ns, false;
        }
        return true;
    }
    void start(Node& n) {
        std::string exe = (tandem::test::bin_dir() / "tandem-node").string();
        pid_t pid = ::fork();
        if (pid == 0) {
            std::string log = n.log.string();
            freopen(log.c_str(), "a", stdout);
            freopen(log.c_str(), "a", stderr);
            ::execlp("ip", "ip", "netns", "exec", n.ns.c_str(), exe.c_str(), "serve", "--home",
                     n.home.c_str(), "--name", ("node-" + n.name).c_str(), "--state-file",
                     n.state.c_str(), nullptr);
            _exit(127);
        }
        n.pid = pid;
    }
    void stop(Node& n, int sig) {
        if (n.pid <= 0) return;
        ::kill(n.pid, sig);
        int status = 0;
        ::waitpid(n.pid, &status, 0);
        n.pid = -1;
    }
    // Runs a tandem-node subcommand inside n's namespace; returns its exit code, output in *out.
    int run(const Node& n, const std::string& args, std::string* out = nullptr) {
        fs::path o = dir_ / (n.name + "-cmd.txt");
        std::string cmd = "ip netns exec " + n.ns + " " +
                          (tandem::test::bin_dir() / "tandem-node").string() + " " + args +
                          " --home " + n.home.string() + " >" + o.string() + " 2>&1";
        int rc = std::system(cmd.c_str());
        if (out) {
            std::ifstream f(o);
            std::stringstream ss;
            ss << f.rdbuf();
            *out = ss.str();
        }
        return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    }
    static nlohmann::json state(const Node& n) {
        std::ifstream f(n.state);
        if (!f) return {};
        try {
            return nlohmann::json::parse(f);
        } catch (...) {
            return {};
        }
    }
    static std::string log_of(const Node& n) {
        std::ifstream f(n.log);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    }
    std::vector<Node> nodes;

  private:
    std::string prefix_, hub_;
    fs::path dir_;
};

std::set<std::string> seen_names(const nlohmann::json& st) {
    std::set<std::string> s;
    if (st.contains("discovered"))
        for (const auto& p : st["discovered"]) s.insert(p.value("name", ""));
    return s;
}

}  // namespace

TEST(NetNamespaces, ThreeNodesDiscoverPairAndRefuse) {
    Testbed tb(3);
    std::string why;
    if (!tb.build(&why)) GTEST_SKIP() << "network namespaces unavailable: " << why;
    Node& a = tb.nodes[0];
    Node& b = tb.nodes[1];
    Node& c = tb.nodes[2];

    auto t0 = std::chrono::steady_clock::now();
    for (auto& n : tb.nodes) tb.start(n);
    // Discovery: every node lists the other two within 3 s of starting.
    bool all = false;
    while (!all && std::chrono::steady_clock::now() - t0 < 3s) {
        std::this_thread::sleep_for(100ms);
        all = true;
        for (auto& n : tb.nodes) all = all && seen_names(Testbed::state(n)).size() == 2;
    }
    double found_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(all) << "not all nodes found each other in 3 s\n"
                     << Testbed::log_of(a) << Testbed::log_of(b) << Testbed::log_of(c);
    std::printf("[ netns ] 3 nodes discovered each other in %.2f s\n", found_s);
    // A peer is listed on its first beacon, from one family; the other family's beacon follows
    // within a beacon interval (later on a loaded machine), so wait for both, at most 3 s more.
    auto families = [](const nlohmann::json& peer) {  // (an IPv4 address, a link-local one)
        bool v4 = false, v6 = false;
        for (const auto& addr : peer["addresses"]) {
            const std::string s = addr;
            v4 = v4 || s.rfind("10.77.0.", 0) == 0;
            v6 = v6 || s.rfind("[fe80::", 0) == 0;
        }
        return std::pair{v4, v6};
    };
    auto both_families = [&](const nlohmann::json& st) {
        for (const auto& p : st["discovered"])
            if (families(p) != std::pair{true, true}) return false;
        return true;
    };
    for (auto t1 = std::chrono::steady_clock::now();
         !both_families(Testbed::state(a)) && std::chrono::steady_clock::now() - t1 < 3s;)
        std::this_thread::sleep_for(100ms);
    {
        auto st = Testbed::state(a);
        for (const auto& p : st["discovered"]) {
            EXPECT_TRUE(p["compatible"].get<bool>());
            EXPECT_TRUE(p["accepts_pairing"].get<bool>());
            const auto [v4, v6] = families(p);
            // Beacons arrive over both families (DAD is off, so link-local is usable at once).
            EXPECT_TRUE(v4) << p.dump();
            EXPECT_TRUE(v6) << p.dump();
        }
    }

    // The CLI browser sees the same list (beside the serving node on the same UDP port), and
    // the manual host:port fallback reaches a node directly.
    std::string listing;
    EXPECT_EQ(tb.run(a, "discover --seconds 2", &listing), 0) << listing;
    EXPECT_NE(listing.find("node-b"), std::string::npos) << listing;
    EXPECT_NE(listing.find("node-c"), std::string::npos) << listing;
    EXPECT_EQ(tb.run(a, "info " + c.ip + ":47401", &listing), 0) << listing;
    EXPECT_NE(listing.find("node-c"), std::string::npos) << listing;

    // Pairing: a (coordinator) types b's code.
    std::string code = Testbed::state(b).value("pairing_code", "");
    ASSERT_EQ(code.size(), 8u);
    std::string wrong = code == "00000000" ? "11111111" : "00000000";
    std::string out;
    EXPECT_EQ(tb.run(c, "pair " + b.ip + ":47401 " + wrong, &out), 3) << out;
    EXPECT_NE(out.find("wrong pairing code"), std::string::npos) << out;
    EXPECT_EQ(tb.run(a, "pair " + b.ip + ":47401 " + code, &out), 0) << out;
    EXPECT_NE(out.find("paired with"), std::string::npos) << out;
    EXPECT_EQ(tb.run(a, "ping " + b.ip + ":47401 --count 5", &out), 0) << out;
    EXPECT_NE(out.find("encrypted channel"), std::string::npos) << out;
    std::printf("[ netns ] %s", out.c_str());
    // c was never paired with b: b refuses it.
    EXPECT_NE(tb.run(c, "ping " + b.ip + ":47401", &out), 0);
    EXPECT_NE(out.find("not paired"), std::string::npos) << out;
    // After b un-pairs a, a is refused too.
    std::string a_id;
    ASSERT_EQ(tb.run(a, "id", &a_id), 0);
    a_id.erase(a_id.find_last_not_of("\n") + 1);
    EXPECT_EQ(tb.run(b, "unpair " + a_id, &out), 0) << out;
    EXPECT_EQ(tb.run(a, "ping " + b.ip + ":47401", &out), 3) << out;
    std::string blog = Testbed::log_of(b);
    EXPECT_NE(blog.find("pairing: wrong code from node"), std::string::npos) << blog;
    EXPECT_NE(blog.find("is not paired with this node"), std::string::npos) << blog;

    // A killed node (no goodbye beacon) disappears from the others within 10 s.
    auto t1 = std::chrono::steady_clock::now();
    tb.stop(c, SIGKILL);
    bool gone = false;
    while (!gone && std::chrono::steady_clock::now() - t1 < 10s) {
        std::this_thread::sleep_for(100ms);
        gone = !seen_names(Testbed::state(a)).count("node-c") &&
               !seen_names(Testbed::state(b)).count("node-c");
    }
    double lost_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    EXPECT_TRUE(gone) << "node-c still listed 10 s after it was killed";
    std::printf("[ netns ] killed node dropped after %.2f s\n", lost_s);
    // A node stopped cleanly says goodbye and is dropped at once.
    auto t2 = std::chrono::steady_clock::now();
    tb.stop(b, SIGTERM);
    bool left = false;
    while (!left && std::chrono::steady_clock::now() - t2 < 3s) {
        std::this_thread::sleep_for(50ms);
        left = !seen_names(Testbed::state(a)).count("node-b");
    }
    EXPECT_TRUE(left) << Testbed::log_of(a);
    std::printf("[ netns ] stopped node dropped after %.2f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count());
}
