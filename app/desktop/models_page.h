#pragma once
// The Models page: the local library (size, quant, fits this machine or not) with Use, Delete
// and Quantize; Hugging Face search with a repository's GGUF files and a quant picker; and the
// download queue with progress, pause/resume/cancel.
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QListWidget>
#include <QPushButton>
#include <QTableView>
#include <QWidget>

#include "download_queue.h"
#include "hub_search_model.h"
#include "library_model.h"
#include "tandem/library/paths.h"
#include "tandem/library/quant_pick.h"

namespace tandem::ui {

class ModelsPage : public QWidget {
    Q_OBJECT
  public:
    ModelsPage(library::LibraryPaths paths, library::HttpOptions http, QWidget* parent = nullptr);

    LibraryModel* library() { return library_; }
    HubSearchModel* hubResults() { return hub_; }
    DownloadQueue* downloads() { return queue_; }
    QTableView* libraryView() { return libraryView_; }
    QLineEdit* searchBox() { return search_; }
    QListView* resultsView() { return resultsView_; }
    QComboBox* quantPicker() { return quant_; }
    QListWidget* fileList() { return files_; }
    QPushButton* downloadButton() { return download_; }
    QPushButton* quantizeButton() { return quantize_; }
    QListView* queueView() { return queueView_; }

  public slots:
    // Shows the files of `repo` (the quant picker fills in when the listing is in).
    void showRepo(const QString& repo);
    // Imports GGUF files found under `folder` into the library (background), then refreshes.
    void importFolder(const QString& folder);

  signals:
    void useModel(const QString& path);
    void repoShown(const QString& repo);
    void status(const QString& message);

  private:
    void deleteSelected();
    void updateButtons();

    library::LibraryPaths paths_;
    LibraryModel* library_ = nullptr;
    HubSearchModel* hub_ = nullptr;
    DownloadQueue* queue_ = nullptr;
    QTableView* libraryView_ = nullptr;
    QPushButton* use_ = nullptr;
    QPushButton* delete_ = nullptr;
    QPushButton* quantize_ = nullptr;
    QLineEdit* search_ = nullptr;
    QListView* resultsView_ = nullptr;
    QLabel* repoLabel_ = nullptr;
    QComboBox* quant_ = nullptr;
    QListWidget* files_ = nullptr;
    QPushButton* download_ = nullptr;
    QListView* queueView_ = nullptr;
    QPushButton* pause_ = nullptr;
    QPushButton* resume_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QLabel* status_ = nullptr;
    QString repo_;
    std::vector<library::QuantGroup> groups_;
    quint64 repoTicket_ = 0;
};

}  // namespace tandem::ui
