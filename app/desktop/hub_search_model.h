#pragma once
// Hugging Face search results (GGUF repositories) as a list: repo id, downloads and likes. The
// query runs on a background thread against HttpOptions::endpoint (HF_ENDPOINT for mirrors and
// the tests' local hub).
#include <QAbstractListModel>

#include <vector>

#include "tandem/library/hf_client.h"

namespace tandem::ui {

class HubSearchModel : public QAbstractListModel {
    Q_OBJECT
  public:
    enum Roles { RepoRole = Qt::UserRole + 1, DownloadsRole, LikesRole };

    explicit HubSearchModel(library::HttpOptions http, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QString repoAt(int row) const;
    const library::HttpOptions& http() const { return http_; }

  public slots:
    void search(const QString& query);

  signals:
    void searched();
    void failed(const QString& message);

  private:
    library::HttpOptions http_;
    std::vector<library::ModelSummary> rows_;
    quint64 ticket_ = 0;
};

}  // namespace tandem::ui
