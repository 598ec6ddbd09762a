#include "split_view.h"

#include <QPainter>

#include "tandem/library/format.h"

namespace tandem::ui {

namespace {
const QColor kColors[] = {QColor(0x3b, 0x82, 0xf6), QColor(0x10, 0xb9, 0x81),
                          QColor(0xf5, 0x9e, 0x0b), QColor(0xef, 0x44, 0x44),
                          QColor(0x8b, 0x5c, 0xf6), QColor(0x06, 0xb6, 0xd4)};
}

SplitView::SplitView(QWidget* parent) : QWidget(parent) {
    setMinimumHeight(120);
}

void SplitView::setPlan(std::vector<Node> nodes, const QString& note) {
    nodes_ = std::move(nodes);
    note_ = note;
    updateGeometry();
    update();
}

QSize SplitView::sizeHint() const {
    return {600, 60 + 34 * int(std::max<size_t>(1, nodes_.size()))};
}

void SplitView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QRect area = rect().adjusted(12, 8, -12, -8);
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(area.left(), area.top() + 14, note_);
    if (nodes_.empty()) return;

    // The whole model as one bar split by share (the picture), then a row per node with its
    // memory use against free memory.
    const int barTop = area.top() + 24, barHeight = 22;
    double x = area.left();
    for (size_t i = 0; i < nodes_.size(); ++i) {
        const double w = nodes_[i].share * area.width();
        const QRectF r(x, barTop, w, barHeight);
        p.fillRect(r, kColors[i % std::size(kColors)]);
        p.setPen(Qt::white);
        p.drawText(
            r, Qt::AlignCenter,
            QStringLiteral("%1 %2%").arg(nodes_[i].name).arg(nodes_[i].share * 100, 0, 'f', 0));
        x += w;
    }
    int y = barTop + barHeight + 10;
    const int labelWidth = 160;
    for (size_t i = 0; i < nodes_.size(); ++i) {
        const auto& n = nodes_[i];
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(QRect(area.left(), y, labelWidth, 20), Qt::AlignVCenter, n.name);
        if (n.live) {
            p.fillRect(QRect(area.left() + labelWidth, y + 4, 12, 12),
                       kColors[i % std::size(kColors)]);
            const QString timing = n.stepMs > 0
                                       ? QStringLiteral("share %1% · step %2 ms · all-reduce %3 µs")
                                             .arg(n.share * 100, 0, 'f', 1)
                                             .arg(n.stepMs, 0, 'f', 1)
                                             .arg(n.allReduceUs, 0, 'f', 0)
                                       : QStringLiteral("share %1% · waiting for the first step")
                                             .arg(n.share * 100, 0, 'f', 1);
            p.drawText(QRect(area.left() + labelWidth + 20, y, area.width() - labelWidth - 20, 20),
                       Qt::AlignVCenter, timing);
            y += 28;
            continue;
        }
        const QRect track(area.left() + labelWidth, y + 4, area.width() - labelWidth - 180, 12);
        p.fillRect(track, palette().color(QPalette::Midlight));
        const double used =
            n.freeBytes ? std::min(1.0, double(n.needBytes) / double(n.freeBytes)) : 0;
        p.fillRect(QRectF(track.left(), track.top(), track.width() * used, track.height()),
                   kColors[i % std::size(kColors)]);
        p.drawText(QRect(track.right() + 8, y, 172, 20), Qt::AlignVCenter,
                   QStringLiteral("%1 of %2 free")
                       .arg(QString::fromStdString(library::human_bytes(n.needBytes)),
                            QString::fromStdString(library::human_bytes(n.freeBytes))));
        y += 28;
    }
}

}  // namespace tandem::ui
