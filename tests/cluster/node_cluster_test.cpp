// Cluster mode end to end: this process is the coordinator (rank 0), the workers are real
// tandem-node processes on loopback TCP. For every hf-tiny model, 2 ranks and 3 ranks with
// unequal shares give the logits of the single-process engine (checked against HF transformers
// in test-engine) and the same greedy continuation. One worker reads its shard from its local
// copy of the model, the other gets it streamed (and then from its shard cache). A killed node
// fails the step within 2 s naming the node; the coordinator then re-plans or runs locally.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include "../engine/engine_fixture.h"
#include "node_process.h"
#include "tandem/engine/generate.h"
#include "tandem/net/cluster_coordinator.h"
#include "tandem/net/identity.h"
#include "tandem/net/peer_store.h"
#include "tandem/net/socket.h"
#include "tp_reference.h"

namespace tandem::test {
namespace {

const char* kSecret = "cluster-test-secret";
const char* kModels[] = {"llama-tiny", "qwen2-tiny", "qwen3-tiny", "qwen3moe-tiny", "gemma3-tiny"};

net::ClusterOptions options(std::vector<std::string> nodes, std::vector<double> shares) {
    net::ClusterOptions co;
    co.nodes = std::move(nodes);
    co.secret = kSecret;
    co.shares = std::move(shares);
    co.threads = 1;
    co.engine.n_ctx = 64;
    co.engine.kv_type = DType::F32;
    return co;
}

struct Reference {
    std::vector<float> logits;
    std::vector<int32_t> greedy;
};

const Reference& reference(const std::string& name) {
    static std::map<std::string, Reference> done;
    auto it = done.find(name);
    if (it != done.end()) return it->second;
    auto file = std::make_shared<gguf::File>(gguf::File::open(*tiny_gguf(name)));
    auto e =
        make_engine(engine::load_model(file, engine::ShardSpec::whole(engine::read_hparams(*file))),
                    64, DType::F32, 1);
    Reference r;
    run_engine(*e, r.logits, r.greedy);
    return done[name] = std::move(r);
}

class ClusterNodes : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        for (const char* m : kModels)
            if (!tiny_gguf(m)) return;  // tests skip
        // One folder with every model file (hard links to the converted fixtures).
        const auto dir = temp_dir("cluster-models");
        for (const char* m : kModels)
            std::filesystem::create_hard_link(*tiny_gguf(m), dir / tiny_gguf(m)->filename());
        const auto models = dir.string();
        // Node A has every model file; node B has none (its shards are streamed, then cached).
        a_ = new NodeProcess(static_node_args(kSecret, (temp_dir("cache-a")).string(), models),
                             "cluster port ");
        b_ = new NodeProcess(static_node_args(kSecret, (temp_dir("cache-b")).string()),
                             "cluster port ");
    }
    static void TearDownTestSuite() {
        delete a_;
        delete b_;
        a_ = b_ = nullptr;
    }
    void check(const std::string& name, std::vector<std::string> nodes,
               std::vector<double> shares) {
        auto path = tiny_gguf(name);
        if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/" << name;
        ASSERT_TRUE(a_ && a_->port() && b_ && b_->port()) << "nodes did not start";
        const Reference& ref = reference(name);
        net::ClusterCoordinator c(*path, options(std::move(nodes), std::move(shares)));
        std::vector<float> logits;
        std::vector<int32_t> greedy;
        run_engine(c.engine(), logits, greedy);
        const auto hp = c.engine().model().hp;
        EXPECT_LT(max_rel_row_error(logits, ref.logits, hp.n_vocab), 1e-5) << name << "\n"
                                                                           << c.describe();
        EXPECT_EQ(greedy, ref.greedy) << name;
        // And through the generation loop the CLI and API server use.
        c.engine().clear();
        engine::GenerateOptions g;
        g.max_tokens = 8;
        g.stop_at_eog = false;
        g.sampling.temperature = 0;
        auto r = engine::generate(c.engine(), std::span(kIds), nullptr, g);
        auto local = make_engine(engine::load_model(*path), 64, DType::F32, 1);
        auto want = engine::generate(*local, std::span(kIds), nullptr, g);
        EXPECT_EQ(r.ids, want.ids) << name;
    }
    static NodeProcess* a_;
    static NodeProcess* b_;
};
NodeProcess* ClusterNodes::a_ = nullptr;
NodeProcess* ClusterNodes::b_ = nullptr;

TEST_F(ClusterNodes, EveryModelTwoRanksMatchesSingleProcess) {
    for (const char* m : kModels) {
        if (!tiny_gguf(m)) GTEST_SKIP() << "fixture not found: hf-tiny/" << m;
        check(m, {a_->address()}, {1, 1});
    }
}

TEST_F(ClusterNodes, EveryModelThreeUnequalRanksMatchesSingleProcess) {
    // 2:1:1: more ranks than KV heads, so KV heads are replicated; node B's shard is streamed
    // the first time and read from its cache after.
    for (const char* m : kModels) {
        if (!tiny_gguf(m)) GTEST_SKIP() << "fixture not found: hf-tiny/" << m;
        check(m, {a_->address(), b_->address()}, {2, 1, 1});
    }
    EXPECT_NE(b_->log().find("from streamed"), std::string::npos) << b_->log();
    EXPECT_NE(a_->log().find("from local file"), std::string::npos) << a_->log();
}

TEST_F(ClusterNodes, CalibratedSharesMatchToo) {
    check("llama-tiny", {b_->address(), a_->address()}, {});
}

TEST_F(ClusterNodes, StreamedShardIsCachedForTheNextSession) {
    check("qwen3-tiny", {a_->address(), b_->address()}, {2, 1, 1});
    check("qwen3-tiny", {a_->address(), b_->address()}, {2, 1, 1});
    EXPECT_NE(b_->log().find("from cache"), std::string::npos) << b_->log();
}

TEST_F(ClusterNodes, WrongSecretIsRefusedNamingTheNode) {
    auto path = tiny_gguf("llama-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/llama-tiny";
    auto co = options({a_->address()}, {1, 1});
    co.secret = "not-the-secret";
    try {
        net::ClusterCoordinator c(*path, co);
        FAIL() << "a wrong secret was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("node " + a_->address()), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("wrong cluster secret"), std::string::npos)
            << e.what();
    }
}

TEST_F(ClusterNodes, UnreachableNodeIsNamed) {
    auto path = tiny_gguf("llama-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/llama-tiny";
    std::string closed;
    {
        net::Listener l(0, "127.0.0.1");  // a port nobody listens on once it is closed
        closed = "127.0.0.1:" + std::to_string(l.port());
    }
    try {
        net::ClusterCoordinator c(*path, options({closed}, {1, 1}));
        FAIL() << "an unreachable node was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("node " + closed), std::string::npos) << e.what();
    }
}

// Generates until `kill_after` tokens, then kills `victim`; the step fails within 2 s naming
// it, the tokens made before are kept, recover() gives an engine that answers the next request
// like a single process.
void kill_mid_generation(const std::string& model, std::vector<NodeProcess*> nodes,
                         NodeProcess* victim, const std::string& expect_recovery) {
    using namespace std::chrono;
    auto path = tiny_gguf(model);
    std::vector<std::string> addresses;
    for (auto* n : nodes) addresses.push_back(n->address());
    std::vector<double> shares(nodes.size() + 1, 1.0);
    net::ClusterCoordinator c(*path, options(addresses, shares));
    std::vector<int32_t> got;
    steady_clock::time_point killed;
    engine::GenerateOptions g;
    g.max_tokens = 30;
    g.stop_at_eog = false;
    g.on_token = [&](int32_t id) {
        got.push_back(id);
        if (got.size() == 3) {
            victim->kill(SIGKILL);
            killed = steady_clock::now();
        }
    };
    std::string error;
    try {
        engine::generate(c.engine(), std::span(kIds), nullptr, g);
    } catch (const Error& e) {
        error = e.what();
    }
    const double seconds = duration<double>(steady_clock::now() - killed).count();
    ASSERT_FALSE(error.empty()) << "the step did not fail";
    EXPECT_LT(seconds, 2.0) << error;
    EXPECT_NE(error.find("node " + victim->address()), std::string::npos) << error;
    EXPECT_TRUE(c.broken());
    EXPECT_EQ(got.size(), 3u);  // what was generated before the fault stays with the caller

    const std::string line = c.recover();
    EXPECT_NE(line.find(expect_recovery), std::string::npos) << line;
    // The next request: same tokens as a single process.
    auto local = make_engine(engine::load_model(*path), 64, DType::F32, 1);
    g.on_token = nullptr;
    g.max_tokens = 8;
    auto want = engine::generate(*local, std::span(kIds), nullptr, g);
    auto r = engine::generate(c.engine(), std::span(kIds), nullptr, g);
    EXPECT_EQ(r.ids, want.ids);
    EXPECT_EQ(std::vector<int32_t>(want.ids.begin(), want.ids.begin() + 3), got);
}

TEST(ClusterFaults, KilledNodeFailsTheStepAndTheNextRequestRunsLocally) {
    auto path = tiny_gguf("llama-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/llama-tiny";
    NodeProcess a(static_node_args(kSecret, temp_dir("cache-k1").string()), "cluster port ");
    kill_mid_generation("llama-tiny", {&a}, &a, "running the whole model locally");
}

TEST(ClusterFaults, KilledNodeOfThreeRePlansOnTheOthers) {
    auto path = tiny_gguf("qwen2-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/qwen2-tiny";
    NodeProcess a(static_node_args(kSecret, temp_dir("cache-k2").string()), "cluster port ");
    NodeProcess b(static_node_args(kSecret, temp_dir("cache-k3").string()), "cluster port ");
    kill_mid_generation("qwen2-tiny", {&a, &b}, &b, "re-planned on 2 ranks");
}

}  // namespace
}  // namespace tandem::test

namespace tandem::test {
namespace {

// Pins `b` in `a`'s peers.json (what pairing with a code ends with; the pairing exchange itself
// is tested in test-net).
void pin(const std::filesystem::path& a_home, const net::Identity& b, const std::string& name) {
    net::PeerStore(a_home / "peers.json").add({b.node_id(), name, b.public_keys(), 0, ""});
}

std::vector<std::string> paired_node_args(const std::filesystem::path& home,
                                          const std::string& cache) {
    // A random discovery port keeps these nodes' beacons away from other tests'.
    const auto discovery = std::to_string(40000 + (::getpid() % 20000));
    return {"serve",
            "--home",
            home.string(),
            "--port",
            "0",
            "--no-pairing",
            "--threads",
            "1",
            "--shard-cache",
            cache,
            "--discovery-port",
            discovery,
            "--name",
            home.filename().string()};
}

TEST(ClusterPaired, TensorParallelOverEncryptedChannelsMatchesSingleProcess) {
    auto path = tiny_gguf("qwen3-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/qwen3-tiny";
    const auto root = temp_dir("paired");
    const auto hc = root / "coord", ha = root / "a", hb = root / "b";
    const auto ic = net::Identity::load_or_create(hc), ia = net::Identity::load_or_create(ha),
               ib = net::Identity::load_or_create(hb);
    // Every pair of the group is paired (workers reach each other over channels too).
    pin(hc, ia, "a");
    pin(hc, ib, "b");
    pin(ha, ic, "coord");
    pin(ha, ib, "b");
    pin(hb, ic, "coord");
    pin(hb, ia, "a");
    NodeProcess a(paired_node_args(ha, (root / "cache-a").string()), "serving on TCP port ");
    NodeProcess b(paired_node_args(hb, (root / "cache-b").string()), "serving on TCP port ");
    ASSERT_TRUE(a.port() && b.port());

    net::ClusterOptions co =
        options({ia.node_id() + "@" + a.address(), ib.node_id() + "@" + b.address()}, {2, 1, 1});
    co.secret.clear();
    co.paired = true;
    co.home = hc;
    {
        net::ClusterCoordinator c(*path, co);
        std::vector<float> logits;
        std::vector<int32_t> greedy;
        run_engine(c.engine(), logits, greedy);
        const Reference& ref = reference("qwen3-tiny");
        EXPECT_LT(max_rel_row_error(logits, ref.logits, c.engine().n_vocab()), 1e-5);
        EXPECT_EQ(greedy, ref.greedy);
    }
    // The sessions ran over authenticated channels: the node logged the coordinator's key.
    EXPECT_NE(a.log().find("channel: authenticated node"), std::string::npos) << a.log();
    EXPECT_NE(b.log().find("from streamed"), std::string::npos) << b.log();

    // A coordinator the nodes never paired with gets no session.
    const auto stranger = root / "stranger";
    net::Identity::load_or_create(stranger);
    pin(stranger, ia, "a");  // it trusts a, but a does not know it
    co.home = stranger;
    co.nodes = {ia.node_id() + "@" + a.address()};
    co.shares = {1, 1};
    try {
        net::ClusterCoordinator c(*path, co);
        FAIL() << "an unpaired coordinator got a session";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("node " + ia.node_id() + "@" + a.address()),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace tandem::test

namespace tandem::test {
namespace {

std::string run_cli(const std::string& args) {
    const std::string cmd = (bin_dir() / "tandem-cli").string() + " " + args + " 2>/dev/null";
    std::string out;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        ::pclose(p);
    }
    return out;
}

std::vector<float> read_f32(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::vector<char> b((std::istreambuf_iterator<char>(in)), {});
    std::vector<float> v(b.size() / 4);
    std::memcpy(v.data(), b.data(), v.size() * 4);
    return v;
}

TEST_F(ClusterNodes, CliEvalAndGenerateWithThreeNodesMatchOneProcess) {
    auto path = tiny_gguf("qwen2-tiny");
    if (!path) GTEST_SKIP() << "fixture not found: hf-tiny/qwen2-tiny";
    ASSERT_TRUE(a_ && a_->port() && b_ && b_->port());
    const auto dir = temp_dir("cluster-cli");
    // f32 KV as in the engine tests: f16 rounding of K/V would amplify last-bit differences.
    const std::string model = "-m " + path->string() + " --threads 1 --ctx 64 --kv-type f32 ";
    const std::string cluster = "--cluster " + a_->address() + "," + b_->address() +
                                " --cluster-secret " + kSecret + " --cluster-shares 1,2,1 ";
    const std::string ids = "--ids 1,17,300,42,42,7,999,3 ";
    run_cli("eval " + model + ids + "--logits-out " + (dir / "one.f32").string());
    run_cli("eval " + model + cluster + ids + "--logits-out " + (dir / "three.f32").string());
    const auto one = read_f32(dir / "one.f32"), three = read_f32(dir / "three.f32");
    ASSERT_EQ(one.size(), 8u * 1024u);
    ASSERT_EQ(three.size(), one.size());
    EXPECT_LT(max_rel_row_error(three, one, 1024), 1e-5);
    const std::string gen = "generate " + model + ids + "-n 12 --print-ids --ignore-eos ";
    const std::string want = run_cli(gen), got = run_cli(gen + cluster);
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace tandem::test
