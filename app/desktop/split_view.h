#pragma once
// The split of a model over the cluster's nodes, painted as one bar of shares; then per node
// either the memory the plan needs there against what it has free (a plan), or, while the chat
// runs tensor-parallel, the shares in use with the node's live step time and all-reduce latency.
#include <QString>
#include <QWidget>

#include <vector>

namespace tandem::ui {

class SplitView : public QWidget {
    Q_OBJECT
  public:
    struct Node {
        QString name;
        double share = 0;       // 0..1 of the model
        quint64 needBytes = 0;  // the plan's total on this node
        quint64 freeBytes = 0;  // what the node has free
        bool live = false;      // a running group: the timings below instead of memory
        double stepMs = 0, allReduceUs = 0;
    };

    explicit SplitView(QWidget* parent = nullptr);
    // `note`: what the plan is of ("Llama 1B at 4096 context"), or why there is none.
    void setPlan(std::vector<Node> nodes, const QString& note);
    const std::vector<Node>& nodes() const { return nodes_; }
    QSize sizeHint() const override;

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    std::vector<Node> nodes_;
    QString note_;
};

}  // namespace tandem::ui
