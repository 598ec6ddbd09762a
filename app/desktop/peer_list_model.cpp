#include "peer_list_model.h"

#include "tandem/library/format.h"

namespace tandem::ui {

namespace {

// The device a peer would offer first: its first backend's first device.
const net::BeaconDevice* firstDevice(const net::Beacon& b, const net::BeaconBackend** backend) {
    for (const auto& be : b.backends)
        if (!be.devices.empty()) {
            *backend = &be;
            return &be.devices.front();
        }
    return nullptr;
}

}  // namespace

PeerListModel::PeerListModel(QObject* parent) : QAbstractTableModel(parent) {}

int PeerListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int PeerListModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant PeerListModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    static const char* names[] = {"Name",    "Backend", "Device",    "Free memory", "Link",
                                  "Latency", "Paired",  "Step time", "All-reduce"};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

QVariant PeerListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const PeerInfo& p = rows_[static_cast<size_t>(index.row())];
    const auto& b = p.discovered.beacon;
    const net::BeaconBackend* backend = nullptr;
    const net::BeaconDevice* dev = firstDevice(b, &backend);
    switch (role) {
        case NodeIdRole:
            return QString::fromStdString(p.discovered.node_id);
        case PairedRole:
            return p.paired;
        case FreeBytesRole:
            return qulonglong(dev ? dev->memory_free : 0);
        case Qt::ToolTipRole:
            return QStringLiteral("%1\n%2%3")
                .arg(QString::fromStdString(p.discovered.node_id),
                     QString::fromStdString(p.discovered.addresses.empty()
                                                ? std::string("-")
                                                : p.discovered.addresses.front()),
                     p.discovered.compatible
                         ? QString()
                         : QStringLiteral("\ncannot join: ") +
                               QString::fromStdString(p.discovered.incompatibility));
        case Qt::DisplayRole:
            switch (index.column()) {
                case Name:
                    return QString::fromStdString(b.name);
                case Backend:
                    return backend ? QString::fromStdString(backend->name) : tr("none");
                case Device:
                    return dev ? QString::fromStdString(dev->name) : QStringLiteral("—");
                case FreeMemory:
                    return dev ? QStringLiteral("%1 of %2")
                                     .arg(QString::fromStdString(
                                              library::human_bytes(dev->memory_free)),
                                          QString::fromStdString(
                                              library::human_bytes(dev->memory_total)))
                               : QStringLiteral("—");
                case Link:
                    return b.rdma ? QStringLiteral("RDMA") : QStringLiteral("TCP");
                case Latency:
                    return p.latencyMs < 0 ? QStringLiteral("—")
                                           : QStringLiteral("%1 ms").arg(p.latencyMs, 0, 'f', 2);
                case Paired:
                    return p.paired ? tr("paired")
                                    : (b.accepts_pairing ? tr("pairing open") : tr("no"));
                case StepTime: {
                    const ClusterRank* r = rankOf(p);
                    return r && r->stepMs > 0 ? QStringLiteral("%1 ms").arg(r->stepMs, 0, 'f', 1)
                                              : QStringLiteral("—");
                }
                case AllReduce: {
                    const ClusterRank* r = rankOf(p);
                    return r && r->allReduceUs > 0
                               ? QStringLiteral("%1 µs").arg(r->allReduceUs, 0, 'f', 0)
                               : QStringLiteral("—");
                }
            }
            return {};
        default:
            return {};
    }
}

const PeerInfo* PeerListModel::peerAt(int row) const {
    return row >= 0 && row < rowCount() ? &rows_[size_t(row)] : nullptr;
}

const ClusterRank* PeerListModel::rankOf(const PeerInfo& p) const {
    if (!health_.active) return nullptr;
    for (size_t r = 1; r < health_.ranks.size(); ++r)
        for (const auto& a : p.discovered.addresses)
            if (health_.ranks[r].address == QString::fromStdString(a)) return &health_.ranks[r];
    for (size_t r = 1; r < health_.ranks.size(); ++r)
        if (health_.ranks[r].name == QString::fromStdString(p.discovered.beacon.name))
            return &health_.ranks[r];
    return nullptr;
}

void PeerListModel::setHealth(const ClusterStatus& status) {
    health_ = status;
    if (!rows_.empty())
        emit dataChanged(index(0, StepTime), index(rowCount() - 1, AllReduce), {Qt::DisplayRole});
}

void PeerListModel::setPeers(std::vector<PeerInfo> peers) {
    // Same peers in the same order: update in place (keeps selection); else reset.
    bool same = peers.size() == rows_.size();
    for (size_t i = 0; same && i < peers.size(); ++i)
        same = peers[i].discovered.node_id == rows_[i].discovered.node_id;
    if (same) {
        rows_ = std::move(peers);
        if (!rows_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
        return;
    }
    beginResetModel();
    rows_ = std::move(peers);
    endResetModel();
}

}  // namespace tandem::ui
