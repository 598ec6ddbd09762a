#pragma once
// The download queue: models pulled from a hub ("owner/name" + quant) into the library, one at
// a time in the order asked, each on its own thread with the library's resumable downloader.
// Rows show the state and progress; pause holds a transfer (the next queued one starts), resume
// continues it, cancel stops it keeping the .part file, retry continues a cancelled or failed
// one where it stopped. A finished download is registered in the catalog (modelAdded).
#include <QAbstractListModel>

#include <list>
#include <memory>
#include <thread>
#include <vector>

#include "tandem/library/downloader.h"
#include "tandem/library/pull.h"

namespace tandem::ui {

class DownloadQueue : public QAbstractListModel {
    Q_OBJECT
  public:
    enum class State { Queued, Downloading, Paused, Verifying, Done, Failed, Cancelled };
    enum Roles { StateRole = Qt::UserRole + 1, DoneBytesRole, TotalBytesRole, FractionRole };

    struct Job {
        int id = 0;
        QString repo, revision, quant;
        State state = State::Queued;
        quint64 done = 0, total = 0;
        double bytesPerSecond = 0, etaSeconds = -1;
        int fileIndex = 0, fileCount = 0;
        QString message;  // the error, or where the model was saved
        std::shared_ptr<library::DownloadControl> control;
    };

    // Files land in <models_dir>/<owner>/<name>/ and are registered in the catalog at
    // `catalogPath`; `http` says which hub (endpoint, token).
    DownloadQueue(library::PullOptions options, QString catalogPath, QObject* parent = nullptr);
    // Cancels every transfer (keeping .part files) and joins the threads.
    ~DownloadQueue() override;

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    const Job* jobAt(int row) const;
    static QString stateName(State s);

  public slots:
    // Adds a pull of `repo` (quant "" : the default pick) and starts it when nothing runs.
    int enqueue(const QString& repo, const QString& quant, const QString& revision = "main");
    void pause(int row);
    void resume(int row);
    void cancel(int row);
    void retry(int row);
    // resume() of a cancelled or failed row retries it.
    // Forgets finished, failed and cancelled rows.
    void clearFinished();

  signals:
    void jobChanged(int row);
    void modelAdded(const QString& path);

  private:
    int rowOf(int jobId) const;
    void startNext();
    void start(Job& job);
    void update(int jobId, const std::function<void(Job&)>& change);

    library::PullOptions options_;
    QString catalog_;
    std::vector<Job> jobs_;
    int nextId_ = 1;
    std::list<std::thread> threads_;
};

}  // namespace tandem::ui
