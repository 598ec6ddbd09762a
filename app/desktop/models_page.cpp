#include "models_page.h"

#include <QApplication>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QMessageBox>
#include <QPainter>
#include <QProgressBar>
#include <QSplitter>
#include <QStyledItemDelegate>
#include <QVBoxLayout>

#include <filesystem>

#include "background.h"
#include "quantize_adapter.h"
#include "tandem/library/catalog.h"
#include "tandem/library/format.h"

namespace tandem::ui {

namespace {

// Draws a download row as its text over a progress bar.
class ProgressDelegate : public QStyledItemDelegate {
  public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter* painter, const QStyleOptionViewItem& option,
               const QModelIndex& index) const override {
        QStyleOptionProgressBar bar;
        bar.rect = option.rect.adjusted(2, 2, -2, -2);
        bar.minimum = 0;
        bar.maximum = 1000;
        bar.progress = int(index.data(DownloadQueue::FractionRole).toDouble() * 1000);
        bar.text = index.data(Qt::DisplayRole).toString();
        bar.textVisible = true;
        bar.state = option.state | QStyle::State_Horizontal;
        QApplication::style()->drawControl(QStyle::CE_ProgressBar, &bar, painter);
        if (option.state & QStyle::State_Selected) {
            QPen pen(option.palette.highlight(), 2);
            painter->setPen(pen);
            painter->drawRect(option.rect.adjusted(1, 1, -1, -1));
        }
    }
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        QSize s = QStyledItemDelegate::sizeHint(option, index);
        s.setHeight(std::max(s.height() + 10, 28));
        return s;
    }
};

}  // namespace

ModelsPage::ModelsPage(library::LibraryPaths paths, library::HttpOptions http, QWidget* parent)
    : QWidget(parent), paths_(std::move(paths)) {
    library_ = new LibraryModel(QString::fromStdString(paths_.catalog.string()), this);
    hub_ = new HubSearchModel(http, this);
    library::PullOptions pull;
    pull.download.http = http;
    pull.models_dir = paths_.models_dir;
    queue_ = new DownloadQueue(pull, QString::fromStdString(paths_.catalog.string()), this);

    // --- local library ---
    auto* libBox = new QGroupBox(tr("On this machine"), this);
    libraryView_ = new QTableView(libBox);
    libraryView_->setModel(library_);
    libraryView_->setSelectionBehavior(QAbstractItemView::SelectRows);
    libraryView_->setSelectionMode(QAbstractItemView::SingleSelection);
    libraryView_->verticalHeader()->hide();
    libraryView_->horizontalHeader()->setSectionResizeMode(LibraryModel::Name,
                                                           QHeaderView::Stretch);
    libraryView_->horizontalHeader()->setSectionResizeMode(LibraryModel::Fits,
                                                           QHeaderView::ResizeToContents);
    use_ = new QPushButton(tr("Use in chat"), libBox);
    delete_ = new QPushButton(tr("Delete…"), libBox);
    quantize_ = new QPushButton(tr("Quantize…"), libBox);
    const QString why = quantizeUnavailableReason();
    quantize_->setEnabled(why.isEmpty());
    quantize_->setToolTip(why.isEmpty() ? tr("Make a smaller copy at another quantization") : why);
    auto* libButtons = new QHBoxLayout;
    libButtons->addWidget(use_);
    libButtons->addWidget(quantize_);
    libButtons->addStretch(1);
    libButtons->addWidget(delete_);
    auto* libLayout = new QVBoxLayout(libBox);
    libLayout->addWidget(libraryView_, 1);
    libLayout->addLayout(libButtons);

    // --- hub search ---
    auto* hubBox = new QGroupBox(tr("Hugging Face"), this);
    search_ = new QLineEdit(hubBox);
    search_->setPlaceholderText(tr("Search GGUF models (Enter)"));
    search_->setClearButtonEnabled(true);
    resultsView_ = new QListView(hubBox);
    resultsView_->setModel(hub_);
    repoLabel_ = new QLabel(tr("Pick a result to see its files"), hubBox);
    repoLabel_->setWordWrap(true);
    quant_ = new QComboBox(hubBox);
    files_ = new QListWidget(hubBox);
    download_ = new QPushButton(tr("Download"), hubBox);
    auto* pickRow = new QHBoxLayout;
    pickRow->addWidget(new QLabel(tr("Quant"), hubBox));
    pickRow->addWidget(quant_, 1);
    pickRow->addWidget(download_);
    auto* repoSide = new QVBoxLayout;
    repoSide->addWidget(repoLabel_);
    repoSide->addWidget(files_, 1);
    repoSide->addLayout(pickRow);
    auto* hubRow = new QHBoxLayout;
    hubRow->addWidget(resultsView_, 1);
    hubRow->addLayout(repoSide, 1);
    auto* hubLayout = new QVBoxLayout(hubBox);
    hubLayout->addWidget(search_);
    hubLayout->addLayout(hubRow, 1);

    // --- downloads ---
    auto* queueBox = new QGroupBox(tr("Downloads"), this);
    queueView_ = new QListView(queueBox);
    queueView_->setModel(queue_);
    queueView_->setItemDelegate(new ProgressDelegate(queueView_));
    pause_ = new QPushButton(tr("Pause"), queueBox);
    resume_ = new QPushButton(tr("Resume"), queueBox);
    cancel_ = new QPushButton(tr("Cancel"), queueBox);
    auto* clear = new QPushButton(tr("Clear finished"), queueBox);
    auto* queueButtons = new QHBoxLayout;
    queueButtons->addWidget(pause_);
    queueButtons->addWidget(resume_);
    queueButtons->addWidget(cancel_);
    queueButtons->addStretch(1);
    queueButtons->addWidget(clear);
    auto* queueLayout = new QVBoxLayout(queueBox);
    queueLayout->addWidget(queueView_, 1);
    queueLayout->addLayout(queueButtons);

    status_ = new QLabel(this);
    status_->setWordWrap(true);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(libBox);
    split->addWidget(hubBox);
    split->addWidget(queueBox);
    split->setSizes({300, 320, 180});
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(split, 1);
    layout->addWidget(status_);

    connect(library_, &LibraryModel::failed, status_, &QLabel::setText);
    connect(hub_, &HubSearchModel::failed, status_, &QLabel::setText);
    connect(this, &ModelsPage::status, status_, &QLabel::setText);
    connect(search_, &QLineEdit::returnPressed, this, [this] { hub_->search(search_->text()); });
    connect(resultsView_, &QListView::clicked, this,
            [this](const QModelIndex& i) { showRepo(hub_->repoAt(i.row())); });
    connect(resultsView_, &QListView::activated, this,
            [this](const QModelIndex& i) { showRepo(hub_->repoAt(i.row())); });
    connect(quant_, &QComboBox::currentIndexChanged, this, [this](int i) {
        files_->clear();
        if (i < 0 || i >= int(groups_.size())) return;
        for (const auto& f : groups_[size_t(i)].files)
            files_->addItem(QStringLiteral("%1   %2").arg(
                QString::fromStdString(f.path),
                QString::fromStdString(library::human_bytes(f.size))));
        updateButtons();
    });
    connect(download_, &QPushButton::clicked, this, [this] {
        if (repo_.isEmpty() || quant_->currentIndex() < 0) return;
        queue_->enqueue(repo_, quant_->currentData().toString());
    });
    connect(use_, &QPushButton::clicked, this, [this] {
        const auto* row = library_->rowAt(libraryView_->currentIndex().row());
        if (row) emit useModel(QString::fromStdString(row->record.path().string()));
    });
    connect(libraryView_, &QTableView::doubleClicked, this, [this](const QModelIndex& i) {
        if (const auto* row = library_->rowAt(i.row()))
            emit useModel(QString::fromStdString(row->record.path().string()));
    });
    connect(delete_, &QPushButton::clicked, this, &ModelsPage::deleteSelected);
    connect(quantize_, &QPushButton::clicked, this, [this] {
        const auto* row = library_->rowAt(libraryView_->currentIndex().row());
        if (!row) return;
        runQuantizeDialog(
            this, QString::fromStdString(row->record.path().string()),
            [this](const QString& out) {
                emit status(tr("Quantized: %1").arg(out));
                importFolder(QFileInfo(out).absolutePath());
            },
            [this](const QString& message) { emit status(message); });
    });
    auto queueRow = [this] { return queueView_->currentIndex().row(); };
    connect(pause_, &QPushButton::clicked, this, [this, queueRow] { queue_->pause(queueRow()); });
    connect(resume_, &QPushButton::clicked, this, [this, queueRow] { queue_->resume(queueRow()); });
    connect(cancel_, &QPushButton::clicked, this, [this, queueRow] { queue_->cancel(queueRow()); });
    connect(clear, &QPushButton::clicked, queue_, &DownloadQueue::clearFinished);
    connect(queue_, &DownloadQueue::modelAdded, library_, &LibraryModel::refresh);
    connect(queue_, &DownloadQueue::jobChanged, this, &ModelsPage::updateButtons);
    connect(queue_, &QAbstractItemModel::rowsInserted, this, [this](const QModelIndex&, int row) {
        queueView_->setCurrentIndex(queue_->index(row));
    });
    connect(libraryView_->selectionModel(), &QItemSelectionModel::currentChanged, this,
            &ModelsPage::updateButtons);
    connect(queueView_->selectionModel(), &QItemSelectionModel::currentChanged, this,
            &ModelsPage::updateButtons);
    connect(library_, &LibraryModel::refreshed, this, &ModelsPage::updateButtons);
    updateButtons();
    library_->refresh();
}

void ModelsPage::showRepo(const QString& repo) {
    if (repo.isEmpty()) return;
    repo_ = repo;
    const quint64 ticket = ++repoTicket_;
    repoLabel_->setText(tr("%1: listing files…").arg(repo));
    quant_->clear();
    files_->clear();
    groups_.clear();
    updateButtons();
    const auto http = hub_->http();
    const std::string r = repo.toStdString();
    runInBackground(
        this,
        [http, r] { return library::group_gguf_files(library::HfClient(http).list_files(r)); },
        [this, ticket, repo](Outcome<std::vector<library::QuantGroup>> out) {
            if (ticket != repoTicket_) return;
            if (!out.ok()) {
                repoLabel_->setText(tr("%1: %2").arg(repo, out.error));
                return;
            }
            groups_ = std::move(*out.value);
            repoLabel_->setText(groups_.empty()
                                    ? tr("%1 has no GGUF files").arg(repo)
                                    : tr("%1: %2 quantizations").arg(repo).arg(groups_.size()));
            int preferred = 0;
            for (size_t i = 0; i < groups_.size(); ++i) {
                const auto& g = groups_[i];
                const QString q = QString::fromStdString(g.quant);
                quant_->addItem(
                    QStringLiteral("%1  (%2%3)")
                        .arg(q, QString::fromStdString(library::human_bytes(g.total_size())),
                             g.complete() ? QString() : tr(", parts missing")),
                    q);
                if (q == QLatin1String("Q4_K_M")) preferred = int(i);
            }
            quant_->setCurrentIndex(groups_.empty() ? -1 : preferred);
            updateButtons();
            emit repoShown(repo);
        });
}

void ModelsPage::importFolder(const QString& folder) {
    const std::string db = paths_.catalog.string(), dir = folder.toStdString();
    runInBackground(
        this,
        [db, dir] {
            library::Catalog catalog(db);
            const auto report = library::import_folder(catalog, dir);
            return std::make_pair(report.added.size(), report.skipped.size());
        },
        [this, folder](Outcome<std::pair<size_t, size_t>> out) {
            if (!out.ok()) {
                emit status(out.error);
                return;
            }
            emit status(tr("%1: %2 models added, %3 files skipped")
                            .arg(folder)
                            .arg(out.value->first)
                            .arg(out.value->second));
            library_->refresh();
        });
}

void ModelsPage::deleteSelected() {
    const auto* row = library_->rowAt(libraryView_->currentIndex().row());
    if (!row) return;
    const auto rec = row->record;
    const bool files = rec.managed;
    const QString text =
        files ? tr("Delete %1 and its files (%2)?")
                    .arg(QString::fromStdString(rec.name),
                         QString::fromStdString(library::human_bytes(rec.size_bytes)))
              : tr("Remove %1 from the library? Its file stays where it is (%2).")
                    .arg(QString::fromStdString(rec.name),
                         QString::fromStdString(rec.path().string()));
    if (QMessageBox::question(this, tr("Delete model"), text) != QMessageBox::Yes) return;
    const std::string db = paths_.catalog.string();
    runInBackground(
        this,
        [db, rec, files] {
            library::Catalog catalog(db);
            catalog.remove(rec.id);
            if (files)
                for (const auto& f : rec.files) {
                    std::error_code ec;
                    std::filesystem::remove(f.path, ec);
                }
            return true;
        },
        [this](Outcome<bool> out) {
            if (!out.ok()) emit status(out.error);
            library_->refresh();
        });
}

void ModelsPage::updateButtons() {
    const bool haveModel = library_->rowAt(libraryView_->currentIndex().row()) != nullptr;
    use_->setEnabled(haveModel);
    delete_->setEnabled(haveModel);
    quantize_->setEnabled(haveModel && quantizeUnavailableReason().isEmpty());
    download_->setEnabled(!repo_.isEmpty() && quant_->currentIndex() >= 0);
    const auto* job = queue_->jobAt(queueView_->currentIndex().row());
    using S = DownloadQueue::State;
    pause_->setEnabled(job && (job->state == S::Downloading || job->state == S::Queued));
    resume_->setEnabled(
        job && (job->state == S::Paused || job->state == S::Cancelled || job->state == S::Failed));
    cancel_->setEnabled(job && (job->state == S::Downloading || job->state == S::Paused ||
                                job->state == S::Queued || job->state == S::Verifying));
}

}  // namespace tandem::ui
