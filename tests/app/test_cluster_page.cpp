// The Cluster page against real node services: two namespaced nodes (their own identity and peer
// files) on loopback discovery with a private port, and the app's own node service. The page must
// list both with what their beacons announce, measure their latency, pair with the code one of
// them shows (both sides pin each other), refuse a wrong code, plan a split and un-pair.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

#include "app_test_env.h"
#include "cluster_page.h"
#include "join_dialog.h"
#include "node_controller.h"
#include "qr_code.h"
#include "tandem/library/format.h"

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
