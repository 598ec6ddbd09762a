// The hand-back of background work to the UI thread (background.h): a reply reaches a live
// receiver on the UI thread, and a receiver deleted while its work finishes on a pool thread
// never gets one. The second is a race between the pool thread's post and the UI thread's
// delete; many short jobs whose receivers go away just as they finish hit it within a run (the
// old hand-back, which posted to the receiver itself, crashed here every time).
#include <QCoreApplication>
#include <QThread>
#include <QtTest>

#include <atomic>
#include <stdexcept>

#include "background.h"

using tandem::ui::Outcome;
using tandem::ui::runInBackground;

class TestBackground : public QObject {
    Q_OBJECT
  private slots:
    void replyReachesALiveReceiverOnTheUiThread() {
        QObject receiver;
        bool ok = false, failed = false;
        QThread* ranOn = nullptr;
        runInBackground(
            &receiver, [] { return 42; },
            [&](Outcome<int> r) {
                ok = r.ok() && *r.value == 42;
                ranOn = QThread::currentThread();
            });
        runInBackground(
            &receiver, []() -> int { throw std::runtime_error("no such model"); },
            [&](Outcome<int> r) { failed = !r.ok() && r.error == "no such model"; });
        QTRY_VERIFY(ok && failed);
        QCOMPARE(ranOn, QCoreApplication::instance()->thread());
    }

    void receiverDeletedAsItsWorkFinishesGetsNoReply() {
        std::atomic<int> finished{0}, spin{0};
        int delivered = 0;
        const int jobs = 20000;
        for (int i = 0; i < jobs; ++i) {
            auto* receiver = new QObject;
            runInBackground(
                receiver, [&finished] { return finished.fetch_add(1); },
                [&delivered](Outcome<int>) { ++delivered; });
            // A varying pause, so that some deletes land while the pool thread is posting.
            for (int k = 0; k < (i % 200) * 10; ++k) spin.fetch_add(1, std::memory_order_relaxed);
            delete receiver;
            if (i % 64 == 0) QCoreApplication::processEvents();
        }
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
        QCOMPARE(finished.load(), jobs);
        QCOMPARE(delivered, 0);
    }
};

QTEST_MAIN(TestBackground)
#include "test_background.moc"
