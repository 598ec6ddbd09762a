#pragma once
// The Cluster page: this node's state, the discovered peers (name, backend, device, free
// memory, link, latency, paired, live step time and all-reduce latency), the join wizard,
// un-pairing, the switch that makes this machine coordinate the chat's model over the paired
// peers in sight, the split (planned, or the shares in use while the chat runs tensor-parallel)
// as a picture, and live health from the running coordinator.
#include <QCheckBox>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QWidget>

#include "node_controller.h"
#include "peer_list_model.h"
#include "split_view.h"

namespace tandem::ui {

class ClusterPage : public QWidget {
    Q_OBJECT
  public:
    explicit ClusterPage(NodeController* node, QWidget* parent = nullptr);

    PeerListModel* peers() { return peers_; }
    QTableView* peerView() { return view_; }
    SplitView* splitView() { return split_; }
    QPushButton* joinButton() { return join_; }
    QPushButton* unpairButton() { return unpair_; }
    QCheckBox* coordinateBox() { return coordinate_; }
    QLabel* stepTimeLabel() { return stepTime_; }
    QLabel* allReduceLabel() { return allReduce_; }
    const ClusterStatus& clusterStatus() const { return status_; }
    // The nodes the chat would run on while coordinating ("node-id@host:port" of every paired
    // peer in sight); empty when the switch is off.
    QStringList coordinatedNodes() const;

  public slots:
    // The model whose split is planned (the chat's model); "" clears the picture.
    void setModel(const QString& path, int contextSize);
    void openJoinDialog();
    void replan();
    // The chat's cluster run (from the generation worker): live shares and timings.
    void setClusterStatus(const tandem::ui::ClusterStatus& status);

  signals:
    void planned();
    // Asks the window to turn the node service on (Settings owns the switch).
    void nodeServiceWanted();
    // The nodes to coordinate changed. `reload`: the switch moved or a paired peer came into
    // sight (the chat's model should move onto the new group); false when peers left sight (a
    // running group handles its own lost nodes; the list is for the next load).
    void coordinationChanged(const QStringList& nodes, bool reload);

  private:
    void updateHeader();
    void updateCoordination(bool toggled);
    void showHealth();

    NodeController* node_;
    PeerListModel* peers_ = nullptr;
    QTableView* view_ = nullptr;
    QLabel* header_ = nullptr;
    QPushButton* start_ = nullptr;
    QPushButton* join_ = nullptr;
    QPushButton* unpair_ = nullptr;
    SplitView* split_ = nullptr;
    QLabel* stepTime_ = nullptr;
    QLabel* allReduce_ = nullptr;
    QCheckBox* coordinate_ = nullptr;
    QStringList coordinated_;  // last emitted
    ClusterStatus status_;
    QString model_;
    int context_ = 4096;
    QString planKey_;  // what the current picture was planned for
    quint64 planTicket_ = 0;
};

}  // namespace tandem::ui
