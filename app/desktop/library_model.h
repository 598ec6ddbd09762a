#pragma once
// The local model library as a table: name, quantization, size and whether it fits the chosen
// device at the default context (the memory planner's verdict). The catalog is read and every
// model planned on a background thread; `refreshed` says when the rows are in.
#include <QAbstractTableModel>
#include <QString>

#include <vector>

#include "fit_check.h"
#include "tandem/library/model_record.h"

namespace tandem::ui {

class LibraryModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { Name = 0, Quant, Size, Fits, ColumnCount };
    enum Roles { IdRole = Qt::UserRole + 1, PathRole, FitsRole, ManagedRole };

    struct Row {
        library::ModelRecord record;
        FitVerdict fit;
    };

    // `catalogPath`: library.db.
    explicit LibraryModel(QString catalogPath, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    const Row* rowAt(int row) const;
    int rowOfPath(const QString& path) const;
    // (name, path) of every model, for the chat page's picker.
    QList<QPair<QString, QString>> choices() const;
    const QString& catalogPath() const { return catalog_; }

  public slots:
    // Re-reads the catalog and re-plans each model for `backend`/`device` at `contextSize`.
    void refresh();
    void setRuntime(const QString& backend, int device, int contextSize);

  signals:
    void refreshed();
    void failed(const QString& message);

  private:
    QString catalog_;
    QString backend_ = QStringLiteral("cpu");
    int device_ = 0;
    int context_ = 4096;
    std::vector<Row> rows_;
    quint64 ticket_ = 0;
};

}  // namespace tandem::ui
