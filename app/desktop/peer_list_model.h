#pragma once
// Discovered peers as a table: name, backend, device, free memory, link (TCP or RDMA), measured
// latency, whether this machine is paired with it, and while the chat runs tensor-parallel the
// node's live step time and all-reduce latency. Rows follow NodeController snapshots and
// keep their identity (node id), so a selection survives refreshes.
#include <QAbstractTableModel>

#include <vector>

#include "cluster_status.h"
#include "node_controller.h"

namespace tandem::ui {

class PeerListModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column {
        Name = 0,
        Backend,
        Device,
        FreeMemory,
        Link,
        Latency,
        Paired,
        StepTime,
        AllReduce,
        ColumnCount
    };
    enum Roles { NodeIdRole = Qt::UserRole + 1, PairedRole, FreeBytesRole };

    explicit PeerListModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    const PeerInfo* peerAt(int row) const;

  public slots:
    void setPeers(std::vector<tandem::ui::PeerInfo> peers);
    // The running cluster's timings, matched to rows by address (then by name).
    void setHealth(const tandem::ui::ClusterStatus& status);

  private:
    const ClusterRank* rankOf(const PeerInfo& p) const;
    std::vector<PeerInfo> rows_;
    ClusterStatus health_;
};

}  // namespace tandem::ui
