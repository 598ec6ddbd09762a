#include "join_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QPixmap>
#include <QVBoxLayout>

#include "qr_code.h"

namespace tandem::ui {

JoinDialog::JoinDialog(NodeController* node, QWidget* parent) : QDialog(parent), node_(node) {
    setWindowTitle(tr("Join a cluster"));
    tabs_ = new QTabWidget(this);

    auto* join = new QWidget(tabs_);
    auto* joinLayout = new QVBoxLayout(join);
    auto* intro = new QLabel(
        tr("On the coordinating machine open Cluster → Join or coordinate → \"This machine "
           "coordinates\", pick this machine and type this code:"),
        join);
    intro->setWordWrap(true);
    code_ = new QLabel(join);
    QFont big = code_->font();
    big.setPointSizeF(big.pointSizeF() * 2.6);
    big.setBold(true);
    big.setLetterSpacing(QFont::AbsoluteSpacing, 3);
    code_->setFont(big);
    code_->setAlignment(Qt::AlignCenter);
    code_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    qr_ = new QLabel(join);
    qr_->setAlignment(Qt::AlignCenter);
    who_ = new QLabel(join);
    who_->setAlignment(Qt::AlignCenter);
    who_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    joinLayout->addWidget(intro);
    joinLayout->addWidget(code_);
    joinLayout->addWidget(qr_, 1);
    joinLayout->addWidget(who_);
    tabs_->addTab(join, tr("This machine joins"));

    auto* coord = new QWidget(tabs_);
    auto* form = new QFormLayout(coord);
    peers_ = new QComboBox(coord);
    input_ = new QLineEdit(coord);
    input_->setPlaceholderText(tr("1234-5678"));
    pair_ = new QPushButton(tr("Pair"), coord);
    log_ = new QListWidget(coord);
    form->addRow(tr("Machine"), peers_);
    form->addRow(tr("Its code"), input_);
    form->addRow(QString(), pair_);
    form->addRow(tr("Result"), log_);
    tabs_->addTab(coord, tr("This machine coordinates"));

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(tabs_, 1);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(node_, &NodeController::updated, this, &JoinDialog::refresh);
    connect(pair_, &QPushButton::clicked, this, [this] {
        const QString id = peers_->currentData().toString();
        if (id.isEmpty() || input_->text().trimmed().isEmpty()) return;
        pair_->setEnabled(false);
        log_->addItem(tr("Pairing with %1…").arg(peers_->currentText()));
        node_->pair(id, input_->text());
    });
    connect(node_, &NodeController::paired, this, [this](const QString& name) {
        log_->addItem(tr("Paired with %1").arg(name));
        input_->clear();
        pair_->setEnabled(true);
    });
    connect(node_, &NodeController::pairingFailed, this, [this](const QString& message) {
        log_->addItem(tr("Failed: %1").arg(message));
        pair_->setEnabled(true);
    });
    resize(520, 560);
    refresh();
}

void JoinDialog::refresh() {
    const NodeSnapshot& s = node_->snapshot();
    if (!s.running) {
        code_->setText(tr("—"));
        qr_->clear();
        who_->setText(tr("The node service is off: turn it on in Settings"));
    } else {
        const QString code = s.pairingCode.isEmpty() ? tr("locked") : s.pairingCode;
        code_->setText(code);
        if (s.pairingCode != shownCode_) {
            shownCode_ = s.pairingCode;
            // What a phone or the other machine's camera would read: who, where, and the code.
            const QImage img = s.pairingCode.isEmpty()
                                   ? QImage()
                                   : qrCodeImage(QStringLiteral("tandem-pair:%1@%2#%3")
                                                     .arg(s.nodeId, s.address, s.pairingCode),
                                                 5);
            qr_->setPixmap(QPixmap::fromImage(img));
        }
        who_->setText(tr("%1 · %2").arg(s.name, s.nodeId.left(8)));
    }
    const QString keep = peers_->currentData().toString();
    peers_->clear();
    for (const auto& p : s.peers) {
        if (!p.discovered.compatible) continue;
        peers_->addItem(QStringLiteral("%1 (%2)%3")
                            .arg(QString::fromStdString(p.discovered.beacon.name),
                                 QString::fromStdString(p.discovered.node_id).left(8),
                                 p.paired ? tr(" · paired") : QString()),
                        QString::fromStdString(p.discovered.node_id));
    }
    const int i = peers_->findData(keep);
    if (i >= 0) peers_->setCurrentIndex(i);
}

}  // namespace tandem::ui
