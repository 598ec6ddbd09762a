#pragma once
// The sidebar's conversations: a list model over the conversation store. Reads run on the
// store's reader thread (AsyncChatStore) and land here through queued calls, so refreshing or
// searching never blocks the UI. With a search text the rows are the conversations whose messages
// match it (full-text search, best match first); otherwise every conversation, pinned first.
#include <QAbstractListModel>
#include <QString>

#include <memory>
#include <vector>

#include "tandem/store/async_chat_store.h"

namespace tandem::ui {

class ConversationListModel : public QAbstractListModel {
    Q_OBJECT
  public:
    enum Roles { IdRole = Qt::UserRole + 1, UpdatedRole, ArchivedRole, SnippetRole };

    struct Row {
        qint64 id = 0;
        QString title;
        qint64 updatedMs = 0;
        bool archived = false;
        QString snippet;  // the matching text when searching
    };

    // `store` must outlive this model (its threads are joined before the model goes).
    explicit ConversationListModel(store::AsyncChatStore& store, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    QString searchText() const { return search_; }
    int rowOf(qint64 conversationId) const;
    qint64 idAt(int row) const;

  public slots:
    // Reloads in the background; `refreshed` says when the rows are in.
    void refresh();
    void setSearchText(const QString& text);
    void setShowArchived(bool show);

  signals:
    void refreshed();
    void failed(const QString& message);

  private:
    void apply(quint64 ticket, std::vector<Row> rows);

    store::AsyncChatStore& store_;
    std::vector<Row> rows_;
    QString search_;
    bool showArchived_ = false;
    quint64 ticket_ = 0;  // a reply older than the latest request is dropped
};

}  // namespace tandem::ui
