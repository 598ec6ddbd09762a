#include "download_queue.h"

#include <QMetaObject>

#include "tandem/library/catalog.h"
#include "tandem/library/format.h"

namespace tandem::ui {

DownloadQueue::DownloadQueue(library::PullOptions options, QString catalogPath, QObject* parent)
    : QAbstractListModel(parent), options_(std::move(options)), catalog_(std::move(catalogPath)) {}

DownloadQueue::~DownloadQueue() {
    for (auto& j : jobs_)
        if (j.control) j.control->cancel();
    for (auto& t : threads_) t.join();
}

QString DownloadQueue::stateName(State s) {
    switch (s) {
        case State::Queued:
            return tr("queued");
        case State::Downloading:
            return tr("downloading");
        case State::Paused:
            return tr("paused");
        case State::Verifying:
            return tr("verifying");
        case State::Done:
            return tr("done");
        case State::Failed:
            return tr("failed");
        case State::Cancelled:
            return tr("cancelled");
    }
    return {};
}

int DownloadQueue::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(jobs_.size());
}

QVariant DownloadQueue::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Job& j = jobs_[static_cast<size_t>(index.row())];
    const double fraction = j.total ? double(j.done) / double(j.total) : 0.0;
    switch (role) {
        case Qt::DisplayRole: {
            QString line = QStringLiteral("%1 %2 — %3").arg(j.repo, j.quant, stateName(j.state));
            if (j.total)
                line += QStringLiteral("  %1 / %2 (%3%)")
                            .arg(QString::fromStdString(library::human_bytes(j.done)),
                                 QString::fromStdString(library::human_bytes(j.total)))
                            .arg(int(fraction * 100));
            if (j.state == State::Downloading && j.bytesPerSecond > 0)
                line += QStringLiteral("  %1/s, %2 left")
                            .arg(QString::fromStdString(
                                     library::human_bytes(uint64_t(j.bytesPerSecond))),
                                 QString::fromStdString(library::human_duration(j.etaSeconds)));
            if (j.fileCount > 1)
                line += QStringLiteral("  file %1/%2").arg(j.fileIndex + 1).arg(j.fileCount);
            if (!j.message.isEmpty() && j.state == State::Failed)
                line += QStringLiteral(": ") + j.message;
            return line;
        }
        case Qt::ToolTipRole:
            return j.message;
        case StateRole:
            return int(j.state);
        case DoneBytesRole:
            return qulonglong(j.done);
        case TotalBytesRole:
            return qulonglong(j.total);
        case FractionRole:
            return fraction;
        default:
            return {};
    }
}

const DownloadQueue::Job* DownloadQueue::jobAt(int row) const {
    return row >= 0 && row < rowCount() ? &jobs_[size_t(row)] : nullptr;
}

int DownloadQueue::rowOf(int jobId) const {
    for (size_t i = 0; i < jobs_.size(); ++i)
        if (jobs_[i].id == jobId) return int(i);
    return -1;
}

int DownloadQueue::enqueue(const QString& repo, const QString& quant, const QString& revision) {
    Job j;
    j.id = nextId_++;
    j.repo = repo;
    j.quant = quant;
    j.revision = revision;
    const int row = rowCount();
    beginInsertRows({}, row, row);
    jobs_.push_back(std::move(j));
    endInsertRows();
    startNext();
    return row;
}

void DownloadQueue::startNext() {
    for (const auto& j : jobs_)
        if (j.state == State::Downloading || j.state == State::Verifying) return;
    for (auto& j : jobs_)
        if (j.state == State::Queued) return start(j);
}

void DownloadQueue::update(int jobId, const std::function<void(Job&)>& change) {
    const int row = rowOf(jobId);
    if (row < 0) return;
    change(jobs_[size_t(row)]);
    emit dataChanged(index(row), index(row));
    emit jobChanged(row);
}

void DownloadQueue::start(Job& job) {
    job.state = State::Downloading;
    job.message.clear();
    job.control = std::make_shared<library::DownloadControl>();
    const int row = rowOf(job.id);
    emit dataChanged(index(row), index(row));
    emit jobChanged(row);

    library::ModelSpec spec;
    spec.repo = job.repo.toStdString();
    spec.revision = job.revision.toStdString();
    spec.quant = job.quant.toStdString();
    const int id = job.id;
    auto control = job.control;
    const auto options = options_;
    const std::string catalogPath = catalog_.toStdString();
    // Progress and the outcome come back to this object's thread as queued calls; the
    // destructor cancels and joins before the object goes, so none outlives it.
    threads_.emplace_back([this, id, spec, control, options, catalogPath] {
        auto post = [this](std::function<void()> f) {
            QMetaObject::invokeMethod(this, std::move(f), Qt::QueuedConnection);
        };
        try {
            library::Catalog catalog(catalogPath);
            auto result = library::pull_model(
                spec, catalog, options,
                [&](const library::PullEvent& e) {
                    post([this, id, e] {
                        update(id, [&](Job& j) {
                            if (j.state != State::Paused)
                                j.state =
                                    e.progress.verifying ? State::Verifying : State::Downloading;
                            j.done = e.progress.done;
                            j.total = e.progress.total;
                            j.bytesPerSecond = e.progress.bytes_per_second;
                            j.etaSeconds = e.progress.eta_seconds;
                            j.fileIndex = int(e.file_index);
                            j.fileCount = int(e.file_count);
                        });
                    });
                },
                control);
            const QString path = QString::fromStdString(result.record.path().string());
            const QString quant = QString::fromStdString(result.quant);
            const quint64 size = result.record.size_bytes;
            post([this, id, path, quant, size] {
                update(id, [&](Job& j) {
                    j.state = State::Done;
                    j.quant = quant;
                    j.done = j.total = size;
                    j.message = path;
                });
                emit modelAdded(path);
                startNext();
            });
        } catch (const library::DownloadCancelled&) {
            post([this, id] {
                update(id, [](Job& j) { j.state = State::Cancelled; });
                startNext();
            });
        } catch (const std::exception& e) {
            const QString message = QString::fromUtf8(e.what());
            post([this, id, message] {
                update(id, [&](Job& j) {
                    j.state = State::Failed;
                    j.message = message;
                });
                startNext();
            });
        }
    });
}

void DownloadQueue::pause(int row) {
    if (row < 0 || row >= rowCount()) return;
    Job& j = jobs_[size_t(row)];
    if (j.state == State::Downloading && j.control) {
        j.control->pause();
        update(j.id, [](Job& x) { x.state = State::Paused; });
        startNext();
    } else if (j.state == State::Queued) {
        update(j.id, [](Job& x) { x.state = State::Paused; });
    }
}

void DownloadQueue::resume(int row) {
    if (row < 0 || row >= rowCount()) return;
    Job& j = jobs_[size_t(row)];
    if (j.state == State::Cancelled || j.state == State::Failed) return retry(row);
    if (j.state != State::Paused) return;
    if (j.control) {  // it was transferring: it goes on where it stopped
        j.control->resume();
        update(j.id, [](Job& x) { x.state = State::Downloading; });
    } else {
        update(j.id, [](Job& x) { x.state = State::Queued; });
        startNext();
    }
}

void DownloadQueue::cancel(int row) {
    if (row < 0 || row >= rowCount()) return;
    Job& j = jobs_[size_t(row)];
    if (j.control && (j.state == State::Downloading || j.state == State::Paused ||
                      j.state == State::Verifying)) {
        j.control->cancel();  // the thread reports Cancelled
    } else if (j.state == State::Queued || j.state == State::Paused) {
        update(j.id, [](Job& x) { x.state = State::Cancelled; });
    }
}

void DownloadQueue::retry(int row) {
    if (row < 0 || row >= rowCount()) return;
    Job& j = jobs_[size_t(row)];
    if (j.state != State::Cancelled && j.state != State::Failed) return;
    j.control.reset();
    update(j.id, [](Job& x) { x.state = State::Queued; });
    startNext();
}

void DownloadQueue::clearFinished() {
    for (int row = rowCount() - 1; row >= 0; --row) {
        const State s = jobs_[size_t(row)].state;
        if (s != State::Done && s != State::Failed && s != State::Cancelled) continue;
        beginRemoveRows({}, row, row);
        jobs_.erase(jobs_.begin() + row);
        endRemoveRows();
    }
}

}  // namespace tandem::ui
