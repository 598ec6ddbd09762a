#pragma once
// The join wizard. "This machine joins": shows this node's one-time pairing code and a QR code
// of it for the coordinating machine's user to type. "This machine coordinates": pick a
// discovered peer, type the code its screen shows, pair; repeat for each peer.
#include <QComboBox>
#include <QDialog>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QTabWidget>

#include "node_controller.h"

namespace tandem::ui {

class JoinDialog : public QDialog {
    Q_OBJECT
  public:
    JoinDialog(NodeController* node, QWidget* parent = nullptr);

    QTabWidget* tabs() { return tabs_; }
    QLabel* codeLabel() { return code_; }
    QLabel* qrLabel() { return qr_; }
    QComboBox* peerPicker() { return peers_; }
    QLineEdit* codeInput() { return input_; }
    QPushButton* pairButton() { return pair_; }
    QListWidget* log() { return log_; }

  private:
    void refresh();

    NodeController* node_;
    QTabWidget* tabs_ = nullptr;
    QLabel* code_ = nullptr;
    QLabel* qr_ = nullptr;
    QLabel* who_ = nullptr;
    QComboBox* peers_ = nullptr;
    QLineEdit* input_ = nullptr;
    QPushButton* pair_ = nullptr;
    QListWidget* log_ = nullptr;
    QString shownCode_;
};

}  // namespace tandem::ui
