#include "hub_search_model.h"

#include "background.h"
#include "tandem/library/format.h"

namespace tandem::ui {

HubSearchModel::HubSearchModel(library::HttpOptions http, QObject* parent)
    : QAbstractListModel(parent), http_(std::move(http)) {}

int HubSearchModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

QVariant HubSearchModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const auto& m = rows_[static_cast<size_t>(index.row())];
    switch (role) {
        case Qt::DisplayRole:
            return QStringLiteral("%1   ↓%2  ♥%3")
                .arg(QString::fromStdString(m.id),
                     QString::fromStdString(library::human_count(m.downloads)),
                     QString::fromStdString(library::human_count(m.likes)));
        case RepoRole:
            return QString::fromStdString(m.id);
        case DownloadsRole:
            return qulonglong(m.downloads);
        case LikesRole:
            return qulonglong(m.likes);
        default:
            return {};
    }
}

QString HubSearchModel::repoAt(int row) const {
    return row >= 0 && row < rowCount() ? QString::fromStdString(rows_[size_t(row)].id) : QString();
}

void HubSearchModel::search(const QString& query) {
    const quint64 ticket = ++ticket_;
    const auto http = http_;
    const std::string q = query.trimmed().toStdString();
    runInBackground(
        this,
        [http, q] { return library::HfClient(http).search(q, library::SearchSort::Downloads, 50); },
        [this, ticket](Outcome<std::vector<library::ModelSummary>> out) {
            if (ticket != ticket_) return;
            beginResetModel();
            rows_ = out.ok() ? std::move(*out.value) : std::vector<library::ModelSummary>{};
            endResetModel();
            if (!out.ok()) emit failed(out.error);
            emit searched();
        });
}

}  // namespace tandem::ui
