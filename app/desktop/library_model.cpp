#include "library_model.h"

#include <QBrush>
#include <QColor>

#include "background.h"
#include "tandem/library/catalog.h"
#include "tandem/library/format.h"

namespace tandem::ui {

LibraryModel::LibraryModel(QString catalogPath, QObject* parent)
    : QAbstractTableModel(parent), catalog_(std::move(catalogPath)) {}

int LibraryModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int LibraryModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant LibraryModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Name:
            return tr("Model");
        case Quant:
            return tr("Quant");
        case Size:
            return tr("Size");
        case Fits:
            return tr("This machine");
        default:
            return {};
    }
}

QVariant LibraryModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Row& r = rows_[static_cast<size_t>(index.row())];
    const auto& m = r.record;
    switch (role) {
        case IdRole:
            return qint64(m.id);
        case PathRole:
            return QString::fromStdString(m.path().string());
        case FitsRole:
            return r.fit.fits;
        case ManagedRole:
            return m.managed;
        case Qt::ToolTipRole:
            return index.column() == Fits ? r.fit.message
                                          : QString::fromStdString(m.path().string());
        case Qt::ForegroundRole:
            if (index.column() == Fits)
                return QBrush(r.fit.fits ? QColor(0x1b, 0x7f, 0x3b) : QColor(0xb0, 0x2a, 0x1d));
            return {};
        case Qt::DisplayRole:
            switch (index.column()) {
                case Name:
                    return QString::fromStdString(m.name);
                case Quant:
                    return QString::fromStdString(m.quant);
                case Size:
                    return QString::fromStdString(library::human_bytes(m.size_bytes));
                case Fits:
                    return r.fit.fits ? tr("fits (%1 at %2 ctx)")
                                            .arg(QString::fromStdString(
                                                library::human_bytes(r.fit.needBytes)))
                                            .arg(r.fit.nCtx)
                                      : tr("does not fit");
            }
            return {};
        default:
            return {};
    }
}

const LibraryModel::Row* LibraryModel::rowAt(int row) const {
    return row >= 0 && row < rowCount() ? &rows_[static_cast<size_t>(row)] : nullptr;
}

int LibraryModel::rowOfPath(const QString& path) const {
    for (size_t i = 0; i < rows_.size(); ++i)
        if (QString::fromStdString(rows_[i].record.path().string()) == path) return int(i);
    return -1;
}

QList<QPair<QString, QString>> LibraryModel::choices() const {
    QList<QPair<QString, QString>> out;
    for (const auto& r : rows_)
        out.append({QStringLiteral("%1 · %2").arg(QString::fromStdString(r.record.name),
                                                  QString::fromStdString(r.record.quant)),
                    QString::fromStdString(r.record.path().string())});
    return out;
}

void LibraryModel::setRuntime(const QString& backend, int device, int contextSize) {
    backend_ = backend;
    device_ = device;
    context_ = contextSize;
    refresh();
}

void LibraryModel::refresh() {
    const quint64 ticket = ++ticket_;
    const std::string db = catalog_.toStdString(), backend = backend_.toStdString();
    const int device = device_, ctx = context_;
    runInBackground(
        this,
        [db, backend, device, ctx] {
            library::Catalog catalog(db);
            std::vector<Row> rows;
            planner::DeviceBudget budget;
            QString budgetError;
            try {
                budget = deviceBudget(backend, device);
            } catch (const std::exception& e) {
                budgetError = QString::fromUtf8(e.what());
            }
            for (auto& rec : catalog.list()) {
                Row r{std::move(rec), {}};
                try {
                    if (!budgetError.isEmpty()) throw std::runtime_error(budgetError.toStdString());
                    r.fit = checkFit(r.record.path().string(), ctx, budget);
                } catch (const std::exception& e) {
                    r.fit.fits = false;
                    r.fit.message = QString::fromUtf8(e.what());
                }
                rows.push_back(std::move(r));
            }
            return rows;
        },
        [this, ticket](Outcome<std::vector<Row>> out) {
            if (ticket != ticket_) return;
            if (!out.ok()) {
                emit failed(out.error);
                emit refreshed();
                return;
            }
            beginResetModel();
            rows_ = std::move(*out.value);
            endResetModel();
            emit refreshed();
        });
}

}  // namespace tandem::ui
