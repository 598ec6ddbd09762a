#pragma once
// The app's node service (discovery, pairing, channels), as tandem-node runs it. Starting and
// stopping happen on a background thread (backends are enumerated for the beacon, sockets are
// bound); once running, a snapshot (discovered peers, paired peers, this node's code) is taken
// off the UI thread every second, and each discovered peer's latency is measured (TCP info
// round trip) every few seconds.
#include <QObject>
#include <QString>
#include <QTimer>

#include <map>
#include <memory>
#include <vector>

#include "tandem/net/node_service.h"

namespace tandem::ui {

struct PeerInfo {
    net::DiscoveredPeer discovered;
    bool paired = false;
    double latencyMs = -1;  // -1: not measured yet
};

struct NodeSnapshot {
    bool running = false;
    QString nodeId, name, address;  // address: this node's port as "host:port"
    QString pairingCode;            // "" while closed or locked
    std::vector<PeerInfo> peers;    // discovered (paired ones flagged), by name
    std::vector<net::PairedPeer> paired;
};

class NodeController : public QObject {
    Q_OBJECT
  public:
    explicit NodeController(QObject* parent = nullptr);
    ~NodeController() override;  // stops the service (joins its threads)

    bool isRunning() const { return service_ != nullptr; }
    const NodeSnapshot& snapshot() const { return snap_; }
    // The running service (nullptr when stopped); for the cluster coordinator adapters.
    std::shared_ptr<net::NodeService> service() const { return service_; }

  public slots:
    // `config.backends` empty: the local backends are announced (enumerated in the background).
    void start(const tandem::net::NodeConfig& config, bool announceDevices = true);
    void stop();
    // Pairs with a discovered peer using the code its screen shows (background).
    void pair(const QString& nodeId, const QString& code);
    void unpair(const QString& nodeId);
    void refresh();

  signals:
    void started();
    void stopped();
    void failed(const QString& message);
    void updated();
    void paired(const QString& name);
    void pairingFailed(const QString& message);

  private:
    void measureLatency();

    std::shared_ptr<net::NodeService> service_;
    NodeSnapshot snap_;
    std::map<std::string, double> latency_;  // node id -> ms
    QTimer poll_, pingTimer_;
    bool refreshing_ = false;
};

}  // namespace tandem::ui

Q_DECLARE_METATYPE(tandem::net::NodeConfig)
