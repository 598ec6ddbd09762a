#pragma once
// The Cluster page: this node's state, the discovered peers (name, backend, device, free
// memory, link, latency, paired), the join wizard, un-pairing, the planned split of the chat's
// model over this machine and the paired peers in sight (a picture), and live health.
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

  public slots:
    // The model whose split is planned (the chat's model); "" clears the picture.
    void setModel(const QString& path, int contextSize);
    void openJoinDialog();
    void replan();

  signals:
    void planned();
    // Asks the window to turn the node service on (Settings owns the switch).
    void nodeServiceWanted();

  private:
    void updateHeader();

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
    QString model_;
    int context_ = 4096;
    QString planKey_;  // what the current picture was planned for
    quint64 planTicket_ = 0;
};

}  // namespace tandem::ui
