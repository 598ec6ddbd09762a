#include "node_controller.h"

#include <chrono>

#include "background.h"
#include "tandem/common/error.h"
#include "tandem/net/local_backends.h"
#include "tandem/net/pairing_session.h"

namespace tandem::ui {

NodeController::NodeController(QObject* parent) : QObject(parent) {
    poll_.setInterval(1000);
    connect(&poll_, &QTimer::timeout, this, &NodeController::refresh);
    pingTimer_.setInterval(3000);
    connect(&pingTimer_, &QTimer::timeout, this, &NodeController::measureLatency);
}

NodeController::~NodeController() {
    if (service_) service_->stop();
}

void NodeController::start(const net::NodeConfig& config, bool announceDevices) {
    if (service_) return;
    runInBackground(
        this,
        [config, announceDevices] {
            net::NodeConfig c = config;
            if (announceDevices && c.backends.empty()) c.backends = net::local_beacon_backends();
            auto s = std::make_shared<net::NodeService>(c);
            s->set_channel_handler(net::echo_handler);
            s->start();
            return s;
        },
        [this](Outcome<std::shared_ptr<net::NodeService>> out) {
            if (!out.ok()) {
                emit failed(out.error);
                return;
            }
            if (service_) {  // started twice: keep the first
                auto extra = *out.value;
                runInBackground(
                    this,
                    [extra] {
                        extra->stop();
                        return true;
                    },
                    [](Outcome<bool>) {});
                return;
            }
            service_ = *out.value;
            poll_.start();
            pingTimer_.start();
            refresh();
            measureLatency();
            emit started();
        });
}

void NodeController::stop() {
    if (!service_) return;
    auto s = std::move(service_);
    service_.reset();
    poll_.stop();
    pingTimer_.stop();
    snap_ = {};
    runInBackground(
        this,
        [s] {
            s->stop();
            return true;
        },
        [this](Outcome<bool>) { emit stopped(); });
    emit updated();
}

void NodeController::refresh() {
    if (!service_ || refreshing_) return;
    refreshing_ = true;
    auto s = service_;
    auto latency = latency_;
    runInBackground(
        this,
        [s, latency] {
            NodeSnapshot snap;
            snap.running = true;
            snap.nodeId = QString::fromStdString(s->identity().node_id());
            snap.name = QString::fromStdString(s->name());
            snap.address = QStringLiteral("127.0.0.1:%1").arg(s->port());
            if (auto code = s->pairing_code()) snap.pairingCode = QString::fromStdString(*code);
            snap.paired = s->peers().list();
            for (auto& d : s->discovered()) {
                PeerInfo p;
                p.discovered = std::move(d);
                for (const auto& q : snap.paired)
                    if (q.node_id == p.discovered.node_id) p.paired = true;
                if (auto it = latency.find(p.discovered.node_id); it != latency.end())
                    p.latencyMs = it->second;
                snap.peers.push_back(std::move(p));
            }
            return snap;
        },
        [this](Outcome<NodeSnapshot> out) {
            refreshing_ = false;
            if (!service_) return;
            if (!out.ok()) return emit failed(out.error);
            snap_ = std::move(*out.value);
            emit updated();
        });
}

void NodeController::measureLatency() {
    if (!service_) return;
    std::vector<std::pair<std::string, std::string>> targets;  // node id, address
    for (const auto& p : snap_.peers)
        if (!p.discovered.addresses.empty())
            targets.emplace_back(p.discovered.node_id, p.discovered.addresses.front());
    if (targets.empty()) return;
    runInBackground(
        this,
        [targets] {
            std::map<std::string, double> out;
            for (const auto& [id, addr] : targets) {
                try {
                    const auto at = net::parse_host_port(addr, 47401);
                    const auto t0 = std::chrono::steady_clock::now();
                    const auto seen = net::probe_node(at, net::Millis(1500));
                    const auto t1 = std::chrono::steady_clock::now();
                    if (seen.node_id == id)
                        out[id] = std::chrono::duration<double, std::milli>(t1 - t0).count();
                } catch (const std::exception&) {
                    out[id] = -1;
                }
            }
            return out;
        },
        [this](Outcome<std::map<std::string, double>> out) {
            if (!out.ok()) return;
            for (const auto& [id, ms] : *out.value) latency_[id] = ms;
            for (auto& p : snap_.peers)
                if (auto it = latency_.find(p.discovered.node_id); it != latency_.end())
                    p.latencyMs = it->second;
            emit updated();
        });
}

void NodeController::pair(const QString& nodeId, const QString& code) {
    if (!service_) return emit pairingFailed(tr("the node service is off (Settings)"));
    const PeerInfo* peer = nullptr;
    for (const auto& p : snap_.peers)
        if (QString::fromStdString(p.discovered.node_id) == nodeId) peer = &p;
    if (!peer || peer->discovered.addresses.empty())
        return emit pairingFailed(tr("that node is no longer visible"));
    const std::string address = peer->discovered.addresses.front();
    const std::string id = nodeId.toStdString();
    const std::string typed = code.toStdString();
    auto s = service_;
    runInBackground(
        this,
        [s, address, id, typed] {
            const std::string digits = net::normalize_pairing_code(typed);
            net::PairOptions o;
            o.expect_node_id = id;
            auto p = net::pair_with(net::parse_host_port(address, 47401), s->identity(), s->name(),
                                    digits, s->peers(), o);
            return QString::fromStdString(p.name);
        },
        [this](Outcome<QString> out) {
            if (out.ok())
                emit paired(*out.value);
            else
                emit pairingFailed(out.error);
            refresh();
        });
}

void NodeController::unpair(const QString& nodeId) {
    if (!service_) return;
    auto s = service_;
    const std::string id = nodeId.toStdString();
    runInBackground(
        this, [s, id] { return s->peers().remove(id); }, [this](Outcome<bool>) { refresh(); });
}

}  // namespace tandem::ui
