// The Models page against real files and a real HTTP server: GGUF models written by the PyPI
// gguf package, imported into a temporary library; the library tests' local hub
// (tests/library/hf_test_server.py) for search, the file list, the quant picker and downloads
// (throttled so progress, pause, resume and cancel can be watched). Every list model runs under
// QAbstractItemModelTester.
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QMessageBox>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <fstream>
#include <nlohmann/json.hpp>

#include "app_test_env.h"
#include "fit_check.h"
#include "gguf_maker.h"
#include "models_page.h"
#include "quantize_adapter.h"
#include "tandem/library/catalog.h"
#include "test_hub.h"

using tandem::ui::DownloadQueue;
using tandem::ui::LibraryModel;
using tandem::ui::ModelsPage;
namespace fs = std::filesystem;

namespace {

std::string readAll(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
}

DownloadQueue::State stateOf(DownloadQueue* q, int row) {
    return static_cast<DownloadQueue::State>(
        q->data(q->index(row), DownloadQueue::StateRole).toInt());
}

// Answers the next modal question box with Yes.
void acceptNextQuestion() {
    QTimer::singleShot(100, [] {
        for (QWidget* w : QApplication::topLevelWidgets())
            if (auto* box = qobject_cast<QMessageBox*>(w); box && box->isVisible())
                box->button(QMessageBox::Yes)->click();
    });
}

}  // namespace

class TestModelsPage : public QObject {
    Q_OBJECT
  private:
    QTemporaryDir dir_;

  private slots:
    void initTestCase() { tandem::test::isolateSettings(dir_.filePath("settings")); }

    void libraryShowsImportedModelsAndDeletes() {
        const fs::path home = dir_.filePath("lib-home").toStdString();
        const fs::path folder = home / "incoming";
        auto a = tandem::test::make_gguf(folder / "alpha.gguf", "--name Alpha --file-type 7");
        if (!a) QSKIP("Python with the gguf package not found (packaging/install-deps.sh)");
        auto b = tandem::test::make_gguf(folder / "beta.gguf", "--name Beta --file-type 15");
        QVERIFY(b);
        const QString model = tandem::test::defaultModel();
        if (!model.isEmpty()) fs::create_symlink(model.toStdString(), folder / "default.gguf");

        const auto opts = tandem::test::windowOptions(QString::fromStdString(home.string()));
        ModelsPage page(opts.library, opts.http);
        QAbstractItemModelTester t1(page.library(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t2(page.hubResults(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t3(page.downloads(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy refreshed(page.library(), &LibraryModel::refreshed);
        QVERIFY(refreshed.wait(10000));  // the first (empty) listing
        QCOMPARE(page.library()->rowCount(), 0);
        page.importFolder(QString::fromStdString(folder.string()));
        QVERIFY(refreshed.wait(30000));

        // The same models as the catalog holds, with the names and sizes the files have.
        tandem::library::Catalog catalog(opts.library.catalog);
        const auto records = catalog.list();
        QCOMPARE(page.library()->rowCount(), int(records.size()));
        QCOMPARE(page.library()->rowCount(), model.isEmpty() ? 2 : 3);
        auto* lib = page.library();
        for (int r = 0; r < lib->rowCount(); ++r) {
            const auto& rec = lib->rowAt(r)->record;
            QCOMPARE(lib->data(lib->index(r, LibraryModel::Name), Qt::DisplayRole).toString(),
                     QString::fromStdString(rec.name));
            QCOMPARE(lib->data(lib->index(r, LibraryModel::Quant), Qt::DisplayRole).toString(),
                     QString::fromStdString(rec.quant));
            if (rec.name == "Alpha") QCOMPARE(rec.size_bytes, a->total_size);
            if (rec.name == "Beta") QCOMPARE(rec.quant, std::string("Q4_K_M"));
        }
        if (!model.isEmpty()) {  // a real model: the planner says it fits this machine
            int row = -1;        // the import may record the link's target
            for (int r = 0; r < lib->rowCount(); ++r)
                if (fs::equivalent(lib->rowAt(r)->record.path(), folder / "default.gguf")) row = r;
            QVERIFY(row >= 0);
            QVERIFY2(
                lib->data(lib->index(row, LibraryModel::Fits), LibraryModel::FitsRole).toBool(),
                qPrintable(
                    lib->data(lib->index(row, LibraryModel::Fits), Qt::ToolTipRole).toString()));
            // On a made-up device with 1 KiB free the planner refuses it at any context.
            const auto verdict =
                tandem::ui::checkFit((folder / "default.gguf").string(), 4096, {"tiny", 1024, 0});
            QVERIFY(!verdict.fits);
            QVERIFY(verdict.message.contains("does not fit"));
        }

        // Quantize: enabled only with the quantizer built in; the tooltip says why not.
        page.libraryView()->setCurrentIndex(lib->index(0, 0));
        if (!tandem::ui::quantizeUnavailableReason().isEmpty()) {
            QVERIFY(!page.quantizeButton()->isEnabled());
            QVERIFY(page.quantizeButton()->toolTip().contains("quantize"));
        } else {
            QVERIFY(page.quantizeButton()->isEnabled());
        }

        // Delete an imported (not downloaded) model: gone from the catalog, file kept.
        int alphaRow = -1;
        for (int r = 0; r < lib->rowCount(); ++r)
            if (lib->rowAt(r)->record.name == "Alpha") alphaRow = r;
        QVERIFY(alphaRow >= 0);
        page.libraryView()->setCurrentIndex(lib->index(alphaRow, 0));
        acceptNextQuestion();
        QMetaObject::invokeMethod(&page, [&page] {
            for (auto* b : page.findChildren<QPushButton*>())
                if (b->text() == QObject::tr("Delete…")) b->click();
        });
        QVERIFY(refreshed.wait(10000));
        QCOMPARE(lib->rowCount(), int(records.size()) - 1);
        QVERIFY(!catalog.find("Alpha"));
        QVERIFY(fs::exists(folder / "alpha.gguf"));
    }

    void hubSearchDownloadPauseResumeCancel() {
        const fs::path hubRoot = dir_.filePath("hub").toStdString();
        const fs::path repo = hubRoot / "acme" / "tiny-GGUF";
        auto q8 = tandem::test::make_gguf(repo / "tiny-Q8_0.gguf", "--name Tiny --file-type 7");
        if (!q8) QSKIP("Python with the gguf package not found (packaging/install-deps.sh)");
        QVERIFY(tandem::test::make_gguf(repo / "tiny-Q4_K_M.gguf", "--name Tiny --file-type 15"));
        std::ofstream(hubRoot / "_models.json")
            << nlohmann::json::array({{{"id", "acme/tiny-GGUF"},
                                       {"downloads", 1200},
                                       {"likes", 7},
                                       {"tags", {"gguf"}}},
                                      {{"id", "acme/other"}, {"downloads", 3}, {"tags", {"gguf"}}}})
                   .dump();
        tandem::test::TestHub hub(hubRoot);
        // ~70 KB at 16 KB/s: several progress reports over a few seconds.
        hub.fault("kind=throttle&rate=16384&times=-1&match=tiny-");

        const QString home = dir_.filePath("dl-home");
        const auto opts = tandem::test::windowOptions(home, hub.url());
        ModelsPage page(opts.library, opts.http);
        QAbstractItemModelTester t1(page.hubResults(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t2(page.downloads(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t3(page.library(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);

        // Search (Enter in the box) lists what the hub has for the text.
        QSignalSpy searched(page.hubResults(), &tandem::ui::HubSearchModel::searched);
        page.searchBox()->setText("tiny");
        QTest::keyClick(page.searchBox(), Qt::Key_Return);
        QVERIFY(searched.wait(10000));
        QCOMPARE(page.hubResults()->rowCount(), 1);
        QCOMPARE(page.hubResults()->repoAt(0), QString("acme/tiny-GGUF"));

        // Its files: two quants, Q4_K_M picked by default; pick Q8_0.
        QSignalSpy shown(&page, &ModelsPage::repoShown);
        QTest::mouseClick(page.resultsView()->viewport(), Qt::LeftButton, {},
                          page.resultsView()->visualRect(page.hubResults()->index(0)).center());
        QVERIFY(shown.wait(10000));
        QCOMPARE(page.quantPicker()->count(), 2);
        QCOMPARE(page.quantPicker()->currentData().toString(), QString("Q4_K_M"));
        page.quantPicker()->setCurrentIndex(page.quantPicker()->findData("Q8_0"));
        QCOMPARE(page.fileList()->count(), 1);
        QVERIFY(page.fileList()->item(0)->text().startsWith("tiny-Q8_0.gguf"));

        // Download: progress rises while transferring; pause holds it; resume finishes it.
        auto* q = page.downloads();
        QSignalSpy added(q, &DownloadQueue::modelAdded);
        QTest::mouseClick(page.downloadButton(), Qt::LeftButton);
        QCOMPARE(q->rowCount(), 1);
        QTRY_VERIFY_WITH_TIMEOUT(q->jobAt(0)->done > 0 && q->jobAt(0)->done < q->jobAt(0)->total,
                                 15000);
        QCOMPARE(stateOf(q, 0), DownloadQueue::State::Downloading);
        QCOMPARE(q->jobAt(0)->total, q8->total_size);
        QVERIFY(q->data(q->index(0), Qt::DisplayRole).toString().contains("%"));
        q->pause(0);
        QCOMPARE(stateOf(q, 0), DownloadQueue::State::Paused);
        QTest::qWait(600);  // a chunk in flight may still land
        const quint64 held = q->jobAt(0)->done;
        QTest::qWait(1200);
        QCOMPARE(q->jobAt(0)->done, held);
        QVERIFY(held < q8->total_size);
        q->resume(0);
        QVERIFY(added.wait(30000));
        QCOMPARE(stateOf(q, 0), DownloadQueue::State::Done);
        const fs::path saved = q->jobAt(0)->message.toStdString();
        QCOMPARE(readAll(saved), readAll(repo / "tiny-Q8_0.gguf"));
        QTRY_VERIFY_WITH_TIMEOUT(
            page.library()->rowOfPath(QString::fromStdString(saved.string())) >= 0, 10000);

        // Cancel keeps the .part; resuming (retry) goes on from it and finishes.
        const int row = q->enqueue("acme/tiny-GGUF", "Q4_K_M");
        QTRY_VERIFY_WITH_TIMEOUT(q->jobAt(row)->done > 0, 15000);
        q->cancel(row);
        QTRY_COMPARE_WITH_TIMEOUT(stateOf(q, row), DownloadQueue::State::Cancelled, 10000);
        const fs::path dest =
            fs::path(opts.library.models_dir) / "acme" / "tiny-GGUF" / "tiny-Q4_K_M.gguf";
        QVERIFY(!fs::exists(dest));
        QVERIFY(fs::exists(tandem::library::part_path(dest)));
        hub.reset();  // full speed now
        q->resume(row);
        QTRY_COMPARE_WITH_TIMEOUT(stateOf(q, row), DownloadQueue::State::Done, 30000);
        QCOMPARE(readAll(dest), readAll(repo / "tiny-Q4_K_M.gguf"));

        // A repo that is not there: a failed row with the hub's answer, nothing registered.
        const int bad = q->enqueue("acme/missing", "");
        QTRY_COMPARE_WITH_TIMEOUT(stateOf(q, bad), DownloadQueue::State::Failed, 15000);
        QVERIFY(!q->jobAt(bad)->message.isEmpty());
        q->clearFinished();
        QCOMPARE(q->rowCount(), 0);
    }
};

QTEST_MAIN(TestModelsPage)
#include "test_models_page.moc"
