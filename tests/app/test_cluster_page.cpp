// The Cluster page against real node services: two namespaced nodes (their own identity and peer
// files) on loopback discovery with a private port, and the app's own node service. The page must
// list both with what their beacons announce, measure their latency, pair with the code one of
// them shows (both sides pin each other), refuse a wrong code, plan a split and un-pair.
// Then the chat on a cluster: two tandem-node processes paired with the app, the chat's model
// tensor-parallel over the three, replies equal to the single-process engine's, live health,
// and a node killed mid-reply (banner, nothing of the conversation lost, the next reply runs on
// what is left).
#include <QAbstractItemModelTester>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <unistd.h>

#include "app_test_env.h"
#include "chat_page.h"
#include "cluster_page.h"
#include "join_dialog.h"
#include "main_window.h"
#include "node_controller.h"
#include "node_process.h"
#include "qr_code.h"
#include "sampling_presets.h"
#include "tandem/backend/backend.h"
#include "tandem/engine/generate.h"
#include "tandem/gguf/gguf.h"
#include "tandem/library/format.h"
#include "tandem/net/identity.h"
#include "tandem/net/peer_store.h"
#include "tandem/tokenizer/vocab.h"
#include "tiny_chat_model.h"

using tandem::ui::ClusterPage;
using tandem::ui::NodeController;
using tandem::ui::PeerListModel;

namespace {

constexpr uint64_t GiB = 1ull << 30;

tandem::net::DiscoveryConfig loopbackDiscovery() {
    tandem::net::DiscoveryConfig d;
    d.port = static_cast<uint16_t>(47600 + ::getpid() % 900);  // apart from real nodes
    d.loopback = true;
    d.interval = tandem::net::Millis(200);
    d.expiry = tandem::net::Millis(3000);
    return d;
}

tandem::net::NodeConfig nodeConfig(const QString& home, const std::string& name,
                                   std::vector<tandem::net::BeaconBackend> backends) {
    tandem::net::NodeConfig c;
    c.home = home.toStdString();
    c.name = name;
    c.port = 0;
    c.discovery = loopbackDiscovery();
    c.backends = std::move(backends);
    return c;
}

// The reference: the same GGUF on one local engine (CPU, 1 thread, the app's context), the same
// greedy sampling, the prompt written out by the test.
std::string localReply(const std::string& model, const std::string& prompt, int maxTokens,
                       int64_t nCtx) {
    using namespace tandem;
    auto file = std::make_shared<gguf::File>(gguf::File::open(model));
    tokenizer::Tokenizer tok(tokenizer::load_vocab(*file));
    auto m = engine::load_model(file, engine::ShardSpec::whole(engine::read_hparams(*file)));
    BackendOptions bo;
    bo.threads = 1;
    engine::EngineOptions eo;
    eo.n_ctx = nCtx;
    engine::Engine e(m, create_backend("cpu", 0, bo), eo);
    const auto ids = tok.encode(prompt, false, true);
    engine::GenerateOptions g;
    g.sampling = tandem::ui::samplingPreset("precise").params;
    g.max_tokens = int(std::min<int64_t>(maxTokens, nCtx - int64_t(ids.size()) - 1));
    std::string text;
    g.on_text = [&](std::string_view t) {
        text += t;
        return true;
    };
    engine::generate(e, ids, &tok, g);
    return text;
}

std::vector<std::pair<std::string, std::string>> turnsOf(
    const std::vector<tandem::store::Message>& path) {
    std::vector<std::pair<std::string, std::string>> turns;
    for (const auto& m : path) turns.emplace_back(tandem::store::role_name(m.role), m.content);
    return turns;
}

// The UI thread's longest stall: the lateness of a 5 ms timer (nothing of the cluster's loading,
// stepping or recovery may run there).
struct UiHeartbeat {
    QTimer timer;
    QElapsedTimer clock;
    qint64 last = 0, worst = 0;
    UiHeartbeat() {
        timer.setInterval(5);
        QObject::connect(&timer, &QTimer::timeout, [this] {
            const qint64 now = clock.elapsed();
            worst = std::max(worst, now - last - 5);
            last = now;
        });
        clock.start();
        timer.start();
    }
};

int rowOf(PeerListModel* m, const QString& name) {
    for (int r = 0; r < m->rowCount(); ++r)
        if (m->data(m->index(r, PeerListModel::Name), Qt::DisplayRole).toString() == name) return r;
    return -1;
}

}  // namespace

class TestClusterPage : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir dir_;

  private slots:
    void initTestCase() { tandem::test::isolateSettings(dir_.filePath("settings")); }

    void peersPairingSplitAndUnpair() {
        tandem::net::NodeService a(
            nodeConfig(dir_.filePath("a"), "node-a", {{"cpu", {{"Test CPU", 8 * GiB, 16 * GiB}}}}));
        tandem::net::NodeService b(nodeConfig(dir_.filePath("b"), "node-b",
                                              {{"vulkan", {{"Test GPU", 12 * GiB, 16 * GiB}}}}));
        a.set_channel_handler(tandem::net::echo_handler);
        b.set_channel_handler(tandem::net::echo_handler);
        a.start();
        b.start();

        NodeController node;
        ClusterPage page(&node);
        QAbstractItemModelTester tester(page.peers(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy started(&node, &NodeController::started);
        node.start(nodeConfig(dir_.filePath("app"), "this-app", {}), false);
        QVERIFY(started.wait(10000));

        // Both nodes, with what their beacons say.
        auto* peers = page.peers();
        QTRY_VERIFY_WITH_TIMEOUT(rowOf(peers, "node-a") >= 0 && rowOf(peers, "node-b") >= 0, 15000);
        const int ra = rowOf(peers, "node-a"), rb = rowOf(peers, "node-b");
        QCOMPARE(peers->data(peers->index(rb, PeerListModel::Backend), Qt::DisplayRole).toString(),
                 QString("vulkan"));
        QCOMPARE(peers->data(peers->index(rb, PeerListModel::Device), Qt::DisplayRole).toString(),
                 QString("Test GPU"));
        QVERIFY(peers->data(peers->index(rb, PeerListModel::FreeMemory), Qt::DisplayRole)
                    .toString()
                    .startsWith(QString::fromStdString(tandem::library::human_bytes(12 * GiB))));
        QCOMPARE(peers->data(peers->index(ra, PeerListModel::Link), Qt::DisplayRole).toString(),
                 QString("TCP"));
        QCOMPARE(peers->data(peers->index(ra, 0), PeerListModel::NodeIdRole).toString(),
                 QString::fromStdString(a.identity().node_id()));
        // Latency: measured by a real round trip to each node.
        QTRY_VERIFY_WITH_TIMEOUT(
            peers
                ->data(peers->index(rowOf(peers, "node-a"), PeerListModel::Latency),
                       Qt::DisplayRole)
                .toString()
                .endsWith(" ms"),
            15000);

        // The join wizard shows this node's code and its QR.
        {
            tandem::ui::JoinDialog dialog(&node);
            QTRY_VERIFY_WITH_TIMEOUT(!node.snapshot().pairingCode.isEmpty(), 5000);
            QCOMPARE(dialog.codeLabel()->text(), node.snapshot().pairingCode);
            QVERIFY(!dialog.qrLabel()->pixmap().isNull());
            QTRY_VERIFY_WITH_TIMEOUT(dialog.peerPicker()->count() >= 2, 5000);
        }

        // A wrong code is refused; nothing is pinned.
        QSignalSpy paired(&node, &NodeController::paired);
        QSignalSpy pairFailed(&node, &NodeController::pairingFailed);
        const QString idA = QString::fromStdString(a.identity().node_id());
        const std::string codeA = *a.pairing_code();
        const std::string wrong = codeA == "1111-1111" ? "2222-2222" : "1111-1111";
        node.pair(idA, QString::fromStdString(wrong));
        QVERIFY(pairFailed.wait(15000));
        QVERIFY(!a.peers().find(node.service()->identity().node_id()));

        // The right code: both sides pin each other; the page shows it paired.
        node.pair(idA, QString::fromStdString(*a.pairing_code()));
        QVERIFY2(paired.wait(15000),
                 pairFailed.isEmpty() ? "" : qPrintable(pairFailed.last().first().toString()));
        QCOMPARE(paired.first().first().toString(), QString("node-a"));
        QVERIFY(a.peers().find(node.service()->identity().node_id()));
        QVERIFY(node.service()->peers().find(a.identity().node_id()));
        QTRY_VERIFY_WITH_TIMEOUT(
            peers->data(peers->index(rowOf(peers, "node-a"), 0), PeerListModel::PairedRole)
                .toBool(),
            5000);
        QVERIFY(!peers->data(peers->index(rowOf(peers, "node-b"), 0), PeerListModel::PairedRole)
                     .toBool());

        // The planned split covers this machine and the paired node.
        const QString model = tandem::test::defaultModel();
        if (!model.isEmpty()) {
            QSignalSpy planned(&page, &ClusterPage::planned);
            page.setModel(model, 2048);
            QTRY_VERIFY_WITH_TIMEOUT(page.splitView()->nodes().size() == 2, 30000);
            double sum = 0;
            for (const auto& n : page.splitView()->nodes()) {
                QVERIFY(n.share > 0);
                QVERIFY(n.needBytes > 0 && n.needBytes <= n.freeBytes);
                sum += n.share;
            }
            QVERIFY(std::abs(sum - 1.0) < 1e-6);
            QCOMPARE(page.splitView()->nodes()[1].name, QString("node-a"));
        }

        // Un-pair: forgotten here; the row says so.
        node.unpair(idA);
        QTRY_VERIFY_WITH_TIMEOUT(!node.service()->peers().find(a.identity().node_id()), 5000);
        QTRY_VERIFY_WITH_TIMEOUT(
            !peers->data(peers->index(rowOf(peers, "node-a"), 0), PeerListModel::PairedRole)
                 .toBool(),
            5000);

        // A node that leaves drops out of the list.
        b.stop();
        QTRY_VERIFY_WITH_TIMEOUT(rowOf(peers, "node-b") < 0, 10000);
        a.stop();
    }

    void chatRunsOnTheClusterAndSurvivesALostNode() {
        namespace fs = std::filesystem;
        const fs::path root = dir_.filePath("tp").toStdString();
        const auto model = tandem::test::tinyChatModel(root / "models");
        if (!model)
            QSKIP(
                "fixture not found: hf-tiny/qwen2-tiny (set TANDEM_FIXTURES or put "
                "../shared/fixtures beside the repo)");
        const QString modelDir = QString::fromStdString((root / "models").string());
        auto discovery = loopbackDiscovery();
        discovery.port = static_cast<uint16_t>(48600 + ::getpid() % 900);  // apart from above

        // The two nodes trust each other (workers of one group talk over paired channels too);
        // the app pairs with each through the page below.
        const QString homeA = dir_.filePath("tp/a"), homeB = dir_.filePath("tp/b");
        const auto ia = tandem::net::Identity::load_or_create(homeA.toStdString());
        const auto ib = tandem::net::Identity::load_or_create(homeB.toStdString());
        tandem::net::PeerStore(fs::path(homeA.toStdString()) / "peers.json")
            .add({ib.node_id(), "tp-b", ib.public_keys(), 0, ""});
        tandem::net::PeerStore(fs::path(homeB.toStdString()) / "peers.json")
            .add({ia.node_id(), "tp-a", ia.public_keys(), 0, ""});
        tandem::test::TestNode a(homeA, "tp-a", discovery.port, modelDir);
        tandem::test::TestNode b(homeB, "tp-b", discovery.port, modelDir);
        QVERIFY2(!a.nodeId().isEmpty(), qPrintable(a.log()));
        QVERIFY2(!b.nodeId().isEmpty(), qPrintable(b.log()));

        std::shared_ptr<tandem::store::ChatStore> store =
            tandem::store::ChatStore::open(dir_.filePath("tp/chats.db").toStdString());
        auto options = tandem::test::windowOptions(dir_.filePath("tp/win"));
        options.settings.threads = 1;
        options.settings.contextSize = 1024;
        tandem::ui::MainWindow w(store, options);
        auto* chat = w.chatPage();
        auto* page = w.clusterPage();
        UiHeartbeat heartbeat;
        tandem::net::NodeConfig appNode = nodeConfig(dir_.filePath("tp/app"), "tp-app", {});
        appNode.discovery = discovery;
        QSignalSpy started(w.node(), &NodeController::started);
        w.node()->start(appNode, false);
        QVERIFY(started.wait(10000));

        // Pair with both nodes with the codes they show.
        QSignalSpy paired(w.node(), &NodeController::paired);
        QSignalSpy pairFailed(w.node(), &NodeController::pairingFailed);
        for (auto* n : {&a, &b}) {
            const QString id = n->nodeId();
            QTRY_VERIFY_WITH_TIMEOUT(
                [&] {
                    for (const auto& p : w.node()->snapshot().peers)
                        if (QString::fromStdString(p.discovered.node_id) == id) return true;
                    return false;
                }(),
                15000);
            const int before = int(paired.count());
            w.node()->pair(id, n->pairingCode());
            QTRY_VERIFY2_WITH_TIMEOUT(
                paired.count() > before,
                qPrintable(pairFailed.isEmpty() ? QString("no answer")
                                                : pairFailed.last().first().toString()),
                15000);
        }
        QTRY_VERIFY_WITH_TIMEOUT(
            [&] {
                int n = 0;
                for (const auto& p : w.node()->snapshot().peers) n += p.paired;
                return n == 2;
            }(),
            10000);

        // Coordinate, then pick the model: it opens over this machine + both nodes.
        page->coordinateBox()->setChecked(true);
        QCOMPARE(page->coordinatedNodes().size(), 2);
        QSignalSpy ready(chat, &tandem::ui::ChatPage::modelReady);
        QSignalSpy failed(chat, &tandem::ui::ChatPage::modelFailed);
        chat->loadModel(QString::fromStdString(model->string()));
        QTRY_VERIFY_WITH_TIMEOUT(!ready.isEmpty() || !failed.isEmpty(), 120000);
        QVERIFY2(failed.isEmpty(),
                 qPrintable(failed.isEmpty() ? QString() : failed.first().first().toString()));
        const QString stats = chat->statsLabel()->text();
        QVERIFY2(stats.contains("cluster of 3") && stats.contains("tp-a") && stats.contains("tp-b"),
                 qPrintable(stats));
        QTRY_VERIFY_WITH_TIMEOUT(page->clusterStatus().active, 5000);
        QCOMPARE(int(page->clusterStatus().ranks.size()), 3);

        // A reply over the cluster equals the single-process engine's (greedy, same prompt).
        QSignalSpy finished(chat, &tandem::ui::ChatPage::generationFinished);
        QSignalSpy shown(chat, &tandem::ui::ChatPage::tokenShown);
        chat->setMaxTokens(24);
        chat->send("Hello there");
        QVERIFY(finished.wait(120000));
        const qint64 stallLoadAndReply = heartbeat.worst;
        QVERIFY2(finished.last().at(0).toLongLong() > 0,
                 qPrintable(finished.last().at(1).toString()));
        const qint64 conv = chat->currentConversation();
        auto path = store->active_path(conv);
        QCOMPARE(int(path.size()), 2);
        const std::string want = localReply(
            model->string(), tandem::test::tinyChatPrompt({{"user", "Hello there"}}), 24, 1024);
        QVERIFY(!want.empty());
        QCOMPARE(QString::fromStdString(path[1].content), QString::fromStdString(want));
        QString streamed;
        for (const auto& args : shown) streamed += args.first().toString();
        QCOMPARE(streamed, QString::fromUtf8(want.c_str()));

        // Live health: every rank timed, shown on the page and next to each peer.
        const auto& st = page->clusterStatus();
        QVERIFY(st.steps > 0);
        for (const auto& r : st.ranks) {
            QVERIFY2(r.stepMs > 0 && r.allReduceUs > 0, qPrintable(r.name));
            QVERIFY(r.share > 0);
        }
        QVERIFY2(page->stepTimeLabel()->text().contains("tp-a") &&
                     page->stepTimeLabel()->text().contains(" ms"),
                 qPrintable(page->stepTimeLabel()->text()));
        QVERIFY(page->allReduceLabel()->text().contains(QString::fromUtf8(" µs")));
        auto* peers = page->peers();
        const QString stepA =
            peers
                ->data(peers->index(rowOf(peers, "tp-a"), PeerListModel::StepTime), Qt::DisplayRole)
                .toString();
        QVERIFY2(stepA.endsWith(" ms") && stepA.split(' ').first().toDouble() > 0,
                 qPrintable(stepA));
        double shares = 0;
        for (const auto& n : page->splitView()->nodes()) {
            QVERIFY(n.live);
            shares += n.share;
        }
        QCOMPARE(int(page->splitView()->nodes().size()), 3);
        QVERIFY(std::abs(shares - 1.0) < 1e-6);
        qInfo("longest UI-thread stall through pairing, cluster load and reply: %lld ms",
              (long long)stallLoadAndReply);
        qInfo("cluster health after %llu steps:", (unsigned long long)st.steps);
        for (const auto& r : st.ranks)
            qInfo("  %s share %.3f step %.2f ms all-reduce %.1f us", qPrintable(r.name), r.share,
                  r.stepMs, r.allReduceUs);

        // Kill tp-b mid-reply: a banner names it, what streamed is kept, nothing is lost.
        QSignalSpy lost(chat, &tandem::ui::ChatPage::nodeLost);
        chat->setMaxTokens(1000);
        const int shownBefore = int(shown.count());
        heartbeat.worst = 0;
        chat->send("Tell me more");
        QTRY_VERIFY_WITH_TIMEOUT(shown.count() >= shownBefore + 2, 60000);
        b.kill();
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() >= 2, 60000);
        QVERIFY2(finished.last().at(1).toString().startsWith("error:"),
                 qPrintable(finished.last().at(1).toString()));
        const qint64 stallLoss = heartbeat.worst;
        QCOMPARE(lost.count(), 1);
        const QString banner = chat->errorBanner()->text();
        QVERIFY2(chat->errorBanner()->isVisibleTo(chat) &&
                     banner.startsWith("tp-b lost: continuing on this machine + tp-a"),
                 qPrintable(banner));
        path = store->active_path(conv);
        QCOMPARE(int(path.size()), 4);
        QCOMPARE(QString::fromStdString(path[2].content), QString("Tell me more"));
        QVERIFY(path[3].status == tandem::store::MessageStatus::Interrupted);
        QVERIFY(!path[3].content.empty());
        // Exactly what the single process would have said, cut where the node died.
        const std::string full = localReply(
            model->string(), tandem::test::tinyChatPrompt(turnsOf({path[0], path[1], path[2]})),
            1000, 1024);
        QVERIFY2(full.compare(0, path[3].content.size(), path[3].content) == 0,
                 path[3].content.c_str());
        QTRY_COMPARE_WITH_TIMEOUT(int(chat->messageView()->messages().size()), 4, 10000);
        QVERIFY(chat->statsLabel()->text().contains("cluster of 2"));
        qInfo("longest UI-thread stall through the reply, the node loss and the re-plan: %lld ms",
              (long long)stallLoss);
        QVERIFY2(stallLoadAndReply < 1000 && stallLoss < 1000,
                 "the UI thread waited on the cluster");
        QCOMPARE(int(page->clusterStatus().ranks.size()), 2);

        // The next message runs on what is left and answers like the single process.
        chat->setMaxTokens(16);
        chat->send("Still there?");
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() >= 3, 120000);
        QVERIFY2(finished.last().at(0).toLongLong() > 0,
                 qPrintable(finished.last().at(1).toString()));
        path = store->active_path(conv);
        QCOMPARE(int(path.size()), 6);
        const std::string next = localReply(
            model->string(),
            tandem::test::tinyChatPrompt(turnsOf({path[0], path[1], path[2], path[3], path[4]})),
            16, 1024);
        QCOMPARE(QString::fromStdString(path[5].content), QString::fromStdString(next));
        QVERIFY(page->clusterStatus().active);
        QCOMPARE(int(page->clusterStatus().ranks.size()), 2);
        QVERIFY(page->clusterStatus().ranks[1].stepMs > 0);

        // The last node dies while the chat is idle: the heartbeat notices, the next message
        // says so and runs on this machine alone, still answering like the single process.
        a.kill();
        QTest::qWait(2500);  // heartbeat: a ping every 500 ms, a dead peer resets at once
        chat->send("And now?");
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() >= 4, 120000);
        QVERIFY2(finished.last().at(0).toLongLong() > 0,
                 qPrintable(finished.last().at(1).toString()));
        QCOMPARE(lost.count(), 2);
        QVERIFY2(
            chat->errorBanner()->text().startsWith("tp-a lost: continuing on this machine alone"),
            qPrintable(chat->errorBanner()->text()));
        path = store->active_path(conv);
        QCOMPARE(int(path.size()), 8);
        std::vector<tandem::store::Message> asked(path.begin(), path.end() - 1);
        QCOMPARE(QString::fromStdString(path[7].content),
                 QString::fromStdString(localReply(
                     model->string(), tandem::test::tinyChatPrompt(turnsOf(asked)), 16, 1024)));
        QVERIFY(!page->clusterStatus().active);
        QVERIFY2(!chat->statsLabel()->text().contains("cluster"),
                 qPrintable(chat->statsLabel()->text()));
    }

    void qrCodeIsWellFormed() {
        const QImage img = tandem::ui::qrCodeImage("tandem-pair:abc@127.0.0.1:47401#1234-5678", 4);
        QVERIFY(!img.isNull());
        QCOMPARE(img.width(), img.height());
        QCOMPARE(img.width() % 4, 0);
        // Quiet zone white; the top-left finder pattern's corner module dark.
        QCOMPARE(img.pixel(0, 0), qRgb(255, 255, 255));
        QCOMPARE(img.pixel(4 * 4 + 1, 4 * 4 + 1), qRgb(0, 0, 0));
        // Version 1..40 sizes: 21 + 4k modules, plus 8 of quiet zone.
        const int modules = img.width() / 4 - 8;
        QCOMPARE((modules - 21) % 4, 0);
    }
};

QTEST_MAIN(TestClusterPage)
#include "test_cluster_page.moc"
