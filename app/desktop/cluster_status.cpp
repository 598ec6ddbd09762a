#include "cluster_status.h"

#include <QObject>

namespace tandem::ui {

QString ClusterStatus::members() const {
    QStringList names;
    for (const auto& r : ranks) names << r.name;
    return names.join(QStringLiteral(" + "));
}

ClusterStatus clusterStatusOf(const net::ClusterHealth& health, const QString& model) {
    ClusterStatus s;
    s.active = health.clustered && health.ranks.size() > 1;
    s.model = model;
    s.steps = health.steps;
    for (size_t r = 0; r < health.ranks.size(); ++r) {
        const auto& h = health.ranks[r];
        ClusterRank c;
        c.address = QString::fromStdString(h.address);
        if (r == 0)
            c.name = QObject::tr("this machine");
        else
            c.name = h.name.empty() ? c.address : QString::fromStdString(h.name);
        c.share = h.share;
        c.stepMs = h.step_ms;
        c.allReduceUs = h.all_reduce_us;
        s.ranks.push_back(std::move(c));
    }
    return s;
}

}  // namespace tandem::ui
