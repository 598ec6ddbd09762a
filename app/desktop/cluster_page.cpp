#include "cluster_page.h"

#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QMessageBox>
#include <QVBoxLayout>

#include "background.h"
#include "fit_check.h"
#include "join_dialog.h"
#include "tandem/common/sysinfo.h"

namespace tandem::ui {

ClusterPage::ClusterPage(NodeController* node, QWidget* parent) : QWidget(parent), node_(node) {
    peers_ = new PeerListModel(this);
    header_ = new QLabel(this);
    header_->setWordWrap(true);
    start_ = new QPushButton(tr("Turn on the node service"), this);
    join_ = new QPushButton(tr("Join or coordinate…"), this);
    unpair_ = new QPushButton(tr("Unpair"), this);
    unpair_->setToolTip(
        tr("Forget the selected peer: it can no longer open a channel to this "
           "machine until paired again"));
    auto* top = new QHBoxLayout;
    top->addWidget(header_, 1);
    top->addWidget(start_);
    top->addWidget(join_);

    auto* peersBox = new QGroupBox(tr("Machines on this network"), this);
    view_ = new QTableView(peersBox);
    view_->setModel(peers_);
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->setSelectionMode(QAbstractItemView::SingleSelection);
    view_->verticalHeader()->hide();
    view_->horizontalHeader()->setSectionResizeMode(PeerListModel::Device, QHeaderView::Stretch);
    auto* peerButtons = new QHBoxLayout;
    peerButtons->addStretch(1);
    peerButtons->addWidget(unpair_);
    auto* peersLayout = new QVBoxLayout(peersBox);
    peersLayout->addWidget(view_, 1);
    peersLayout->addLayout(peerButtons);

    coordinate_ = new QCheckBox(
        tr("Coordinate: run the chat's model on this machine + the paired machines in sight"),
        this);
    coordinate_->setToolTip(
        tr("Tensor parallel over encrypted channels to the paired nodes; a node that is lost "
           "mid-reply leaves the conversation intact and the chat continues on the others"));

    auto* planBox = new QGroupBox(tr("Split"), this);
    split_ = new SplitView(planBox);
    auto* planLayout = new QVBoxLayout(planBox);
    planLayout->addWidget(split_);

    auto* healthBox = new QGroupBox(tr("Health"), this);
    stepTime_ = new QLabel(healthBox);
    allReduce_ = new QLabel(healthBox);
    stepTime_->setWordWrap(true);
    allReduce_->setWordWrap(true);
    auto* health = new QFormLayout(healthBox);
    health->addRow(tr("Step time per node"), stepTime_);
    health->addRow(tr("All-reduce latency"), allReduce_);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(peersBox, 1);
    layout->addWidget(coordinate_);
    layout->addWidget(planBox);
    layout->addWidget(healthBox);

    connect(start_, &QPushButton::clicked, this, &ClusterPage::nodeServiceWanted);
    connect(join_, &QPushButton::clicked, this, &ClusterPage::openJoinDialog);
    connect(unpair_, &QPushButton::clicked, this, [this] {
        const PeerInfo* p = peers_->peerAt(view_->currentIndex().row());
        if (!p || !p->paired) return;
        const QString name = QString::fromStdString(p->discovered.beacon.name);
        if (QMessageBox::question(this, tr("Unpair"), tr("Unpair %1?").arg(name)) ==
            QMessageBox::Yes)
            node_->unpair(QString::fromStdString(p->discovered.node_id));
    });
    connect(node_, &NodeController::updated, this, [this] {
        peers_->setPeers(node_->snapshot().peers);
        updateHeader();
        replan();
        updateCoordination(false);
    });
    connect(coordinate_, &QCheckBox::toggled, this, [this] { updateCoordination(true); });
    connect(node_, &NodeController::started, this, &ClusterPage::updateHeader);
    connect(node_, &NodeController::stopped, this, &ClusterPage::updateHeader);
    connect(node_, &NodeController::failed, header_,
            [this](const QString& m) { header_->setText(tr("Node service: %1").arg(m)); });
    connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this,
            &ClusterPage::updateHeader);
    updateHeader();
    replan();
    showHealth();
}

QStringList ClusterPage::coordinatedNodes() const {
    QStringList nodes;
    if (!coordinate_->isChecked() || !node_->isRunning()) return nodes;
    for (const auto& p : node_->snapshot().peers)
        if (p.paired && p.discovered.compatible && !p.discovered.addresses.empty())
            nodes << QString::fromStdString(p.discovered.node_id + "@" +
                                            p.discovered.addresses.front());
    return nodes;
}

void ClusterPage::updateCoordination(bool toggled) {
    const QStringList nodes = coordinatedNodes();
    if (!toggled && nodes == coordinated_) return;
    bool added = false;
    for (const QString& n : nodes) added |= !coordinated_.contains(n);
    coordinated_ = nodes;
    emit coordinationChanged(nodes, toggled || added);
}

void ClusterPage::setClusterStatus(const ClusterStatus& status) {
    const bool wasActive = status_.active;
    status_ = status;
    peers_->setHealth(status);
    showHealth();
    if (status.active) {
        std::vector<SplitView::Node> nodes;
        for (const auto& r : status.ranks) {
            SplitView::Node n;
            n.name = r.name;
            n.share = r.share;
            n.live = true;
            n.stepMs = r.stepMs;
            n.allReduceUs = r.allReduceUs;
            nodes.push_back(std::move(n));
        }
        split_->setPlan(std::move(nodes), tr("%1 running over %2 nodes (shares in use, live)")
                                              .arg(status.model)
                                              .arg(status.ranks.size()));
        emit planned();
    } else if (wasActive) {
        planKey_.clear();  // back to the plan
        replan();
    }
}

void ClusterPage::showHealth() {
    if (!status_.active) {
        stepTime_->setText(tr("— (the chat's model is not running tensor-parallel)"));
        allReduce_->setText(tr("—"));
        return;
    }
    if (status_.steps == 0) {
        stepTime_->setText(tr("%1: waiting for the first step").arg(status_.members()));
        allReduce_->setText(tr("—"));
        return;
    }
    QStringList steps, reduces;
    for (const auto& r : status_.ranks) {
        steps << tr("%1 %2 ms").arg(r.name).arg(r.stepMs, 0, 'f', 1);
        reduces << tr("%1 %2 µs").arg(r.name).arg(r.allReduceUs, 0, 'f', 0);
    }
    stepTime_->setText(steps.join(QStringLiteral(" · ")) +
                       tr("  (recent steps; %1 timed)").arg(status_.steps));
    allReduce_->setText(reduces.join(QStringLiteral(" · ")) +
                        tr("  (this machine: the whole all-reduce; a node: the exchange with it)"));
}

void ClusterPage::updateHeader() {
    const auto& s = node_->snapshot();
    if (!node_->isRunning()) {
        header_->setText(
            tr("The node service is off: this machine neither sees nor is seen by "
               "other machines."));
    } else {
        int paired = 0;
        for (const auto& p : s.peers) paired += p.paired;
        header_->setText(tr("<b>%1</b> (%2) · %3 machines in sight, %4 paired")
                             .arg(s.name.toHtmlEscaped(), s.nodeId.left(8))
                             .arg(s.peers.size())
                             .arg(paired));
    }
    start_->setVisible(!node_->isRunning());
    const PeerInfo* p = peers_->peerAt(view_->currentIndex().row());
    unpair_->setEnabled(p && p->paired);
}

void ClusterPage::openJoinDialog() {
    JoinDialog dialog(node_, this);
    dialog.exec();
}

void ClusterPage::setModel(const QString& path, int contextSize) {
    model_ = path;
    context_ = contextSize;
    replan();
}

void ClusterPage::replan() {
    if (status_.active) return;  // the live picture shows the shares in use
    // This machine plus the paired peers in sight, each with the free memory it announces.
    std::vector<planner::DeviceBudget> devices;
    devices.push_back(
        {"this machine", host_memory().available, planner::runtime_overhead(DeviceType::Cpu)});
    for (const auto& p : node_->snapshot().peers) {
        if (!p.paired) continue;
        const auto& b = p.discovered.beacon;
        if (b.backends.empty() || b.backends.front().devices.empty()) continue;
        const auto& d = b.backends.front().devices.front();
        devices.push_back({b.name, d.memory_free,
                           planner::runtime_overhead(b.backends.front().name == "cpu"
                                                         ? DeviceType::Cpu
                                                         : DeviceType::DiscreteGpu)});
    }
    QString key = model_ + QString::number(context_);
    for (const auto& d : devices)
        key += QStringLiteral("|%1:%2").arg(QString::fromStdString(d.name)).arg(d.free_bytes >> 26);
    if (key == planKey_) return;
    planKey_ = key;
    if (model_.isEmpty()) {
        split_->setPlan({}, tr("Pick a model in Chats or Models to see how it would be split."));
        emit planned();
        return;
    }
    const quint64 ticket = ++planTicket_;
    const std::string path = model_.toStdString();
    const int ctx = context_;
    const QString name = QFileInfo(model_).fileName();
    runInBackground(
        this,
        [path, ctx, devices] { return std::make_pair(planSplit(path, ctx, devices), devices); },
        [this, ticket,
         name](Outcome<std::pair<planner::FitResult, std::vector<planner::DeviceBudget>>> out) {
            if (ticket != planTicket_) return;
            if (!out.ok()) {
                split_->setPlan({}, tr("%1: %2").arg(name, out.error));
                emit planned();
                return;
            }
            const auto& [fit, devs] = *out.value;
            std::vector<SplitView::Node> nodes;
            for (size_t i = 0; i < fit.devices.size(); ++i)
                nodes.push_back({QString::fromStdString(devs[i].name), fit.shares[i],
                                 fit.devices[i].total(), devs[i].free_bytes});
            split_->setPlan(std::move(nodes), tr("%1 at %2 context over %3 node(s)")
                                                  .arg(name)
                                                  .arg(fit.n_ctx)
                                                  .arg(fit.devices.size()));
            emit planned();
        });
}

}  // namespace tandem::ui
