#pragma once
// Running blocking work (disk, network, model files) off the UI thread. The work runs on Qt's
// global thread pool; its result, or the message of the exception it threw, is handed back to
// the UI thread through a queued call. A reply whose receiver is gone is dropped. Receivers are
// UI-thread objects. postTo() is that hand-back alone, for work started elsewhere (the chat
// store's own thread).
//
//   runInBackground(this, [path] { return inspect(path); },
//                   [this](Outcome<Record> r) { if (r.ok()) show(*r.value); else warn(r.error); });
#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QString>
#include <QThreadPool>

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace tandem::ui {

template <class T>
struct Outcome {
    std::optional<T> value;
    QString error;  // set when the work threw
    bool ok() const { return value.has_value(); }
};

// From any thread: runs `fn` on the UI thread through a queued call when `receiver` (a UI-thread
// object) is still there. The call is queued on the application object, never on `receiver`:
// the UI thread may delete the receiver between a check here and the post, and an event posted
// to an object in the middle of ~QObject outlives it (Qt only removes the events it has counted)
// and is later delivered to freed memory. Checked again on the UI thread, where the receiver is
// deleted, the QPointer cannot go stale before fn runs.
template <class T, class Fn>
void postTo(const QPointer<T>& receiver, Fn fn) {
    if (!receiver) return;  // gone already: fn is dropped on this thread
    // Null while the application closes (its destructor waits for the global pool's work).
    QCoreApplication* app = QCoreApplication::instance();
    if (!app) return;
    QMetaObject::invokeMethod(
        app,
        [receiver, fn = std::move(fn)]() mutable {
            if (receiver) fn();
        },
        Qt::QueuedConnection);
}

template <class Work, class Done>
void runInBackground(QObject* receiver, Work work, Done done) {
    using R = std::invoke_result_t<Work&>;
    Q_ASSERT(receiver->thread() == QCoreApplication::instance()->thread());
    QPointer<QObject> target(receiver);
    QThreadPool::globalInstance()->start([target, work = std::move(work),
                                          done = std::move(done)]() mutable {
        Outcome<R> out;
        try {
            out.value.emplace(work());
        } catch (const std::exception& e) {
            out.error = QString::fromUtf8(e.what());
        } catch (...) {
            out.error = QStringLiteral("unknown error");
        }
        postTo(target,
               [done = std::move(done), out = std::move(out)]() mutable { done(std::move(out)); });
    });
}

}  // namespace tandem::ui
