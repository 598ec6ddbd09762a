#include "conversation_list_model.h"

#include <QPointer>

#include <set>

#include "background.h"

namespace tandem::ui {

ConversationListModel::ConversationListModel(store::AsyncChatStore& store, QObject* parent)
    : QAbstractListModel(parent), store_(store) {}

int ConversationListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

QVariant ConversationListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Row& r = rows_[static_cast<size_t>(index.row())];
    switch (role) {
        case Qt::DisplayRole:
            return r.title;
        case Qt::ToolTipRole:
            return r.snippet.isEmpty() ? r.title : r.snippet;
        case IdRole:
            return r.id;
        case UpdatedRole:
            return r.updatedMs;
        case ArchivedRole:
            return r.archived;
        case SnippetRole:
            return r.snippet;
        default:
            return {};
    }
}

QHash<int, QByteArray> ConversationListModel::roleNames() const {
    auto names = QAbstractListModel::roleNames();
    names[IdRole] = "conversationId";
    names[UpdatedRole] = "updated";
    names[ArchivedRole] = "archived";
    names[SnippetRole] = "snippet";
    return names;
}

int ConversationListModel::rowOf(qint64 conversationId) const {
    for (size_t i = 0; i < rows_.size(); ++i)
        if (rows_[i].id == conversationId) return static_cast<int>(i);
    return -1;
}

qint64 ConversationListModel::idAt(int row) const {
    return row >= 0 && row < rowCount() ? rows_[static_cast<size_t>(row)].id : -1;
}

void ConversationListModel::setSearchText(const QString& text) {
    if (text == search_) return;
    search_ = text;
    refresh();
}

void ConversationListModel::setShowArchived(bool show) {
    if (show == showArchived_) return;
    showArchived_ = show;
    refresh();
}

void ConversationListModel::refresh() {
    const quint64 ticket = ++ticket_;
    const std::string query = search_.trimmed().toStdString();
    const bool archived = showArchived_;
    QPointer<ConversationListModel> self(this);
    // The job runs on the store's reader thread; the reply is queued to the UI thread (postTo:
    // dropped if the model is gone by then).
    (void)store_.read([self, ticket, query, archived](store::ChatStore& s) {
        std::vector<Row> rows;
        QString error;
        try {
            if (query.empty()) {
                for (const auto& c : s.list_conversations(archived))
                    rows.push_back(
                        {c.id, QString::fromStdString(c.title), c.updated_at_ms, c.archived, {}});
            } else {
                std::set<int64_t> seen;
                for (const auto& hit : s.search(query, 200, "", "")) {
                    if (!seen.insert(hit.conversation_id).second) continue;
                    auto c = s.conversation(hit.conversation_id);
                    if (c.archived && !archived) continue;
                    rows.push_back({c.id, QString::fromStdString(c.title), c.updated_at_ms,
                                    c.archived, QString::fromStdString(hit.snippet)});
                }
            }
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        postTo(self, [self, ticket, rows = std::move(rows), error]() mutable {
            if (!error.isEmpty()) emit self->failed(error);
            self->apply(ticket, std::move(rows));
        });
    });
}

void ConversationListModel::apply(quint64 ticket, std::vector<Row> rows) {
    if (ticket != ticket_) return;
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
    emit refreshed();
}

}  // namespace tandem::ui
