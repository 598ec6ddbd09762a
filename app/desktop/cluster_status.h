#pragma once
// What the chat's tensor-parallel run looks like right now, for the Cluster page and the chat's
// status line: the ranks in use (this machine first) with their real shares and the
// coordinator's live timings (net::ClusterCoordinator::health()). Built on the generation
// thread, delivered by queued signals.
#include <QMetaType>
#include <QString>

#include <vector>

#include "tandem/net/cluster_coordinator.h"

namespace tandem::ui {

struct ClusterRank {
    QString name;     // the node's name ("this machine" for rank 0)
    QString address;  // host:port of the node ("local" for rank 0)
    double share = 0;
    double stepMs = 0;       // 0: not measured yet
    double allReduceUs = 0;  // 0: not measured yet
};

struct ClusterStatus {
    bool active = false;  // the chat's model runs tensor-parallel now
    QString model;        // file name of the model
    quint64 steps = 0;    // step graphs timed so far
    std::vector<ClusterRank> ranks;

    // "this machine + node-a + node-b"
    QString members() const;
};

ClusterStatus clusterStatusOf(const net::ClusterHealth& health, const QString& model);

}  // namespace tandem::ui

Q_DECLARE_METATYPE(tandem::ui::ClusterStatus)
