#pragma once
// Running blocking work (disk, network, model files) off the UI thread. The work runs on Qt's
// global thread pool; its result, or the message of the exception it threw, is handed back to
// `receiver`'s thread through a queued call. A reply whose receiver is gone is dropped.
// postTo() is that hand-back alone, for work started elsewhere (the chat store's own thread).
//
//   runInBackground(this, [path] { return inspect(path); },
//                   [this](Outcome<Record> r) { if (r.ok()) show(*r.value); else warn(r.error); });
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

// From any thread: runs `fn` on `receiver`'s thread through a queued call; dropped when the
// receiver is gone, whether before the call is queued or by the time it runs.
template <class T, class Fn>
void postTo(const QPointer<T>& receiver, Fn fn) {
    T* obj = receiver.data();
    if (!obj) return;
    QMetaObject::invokeMethod(
        obj,
        [receiver, fn = std::move(fn)]() mutable {
            if (receiver) fn();
        },
        Qt::QueuedConnection);
}

template <class Work, class Done>
void runInBackground(QObject* receiver, Work work, Done done) {
    using R = std::invoke_result_t<Work&>;
    QPointer<QObject> target(receiver);
    QThreadPool::globalInstance()->start(
        [target, work = std::move(work), done = std::move(done)]() mutable {
            Outcome<R> out;
            try {
                out.value.emplace(work());
            } catch (const std::exception& e) {
                out.error = QString::fromUtf8(e.what());
            } catch (...) {
                out.error = QStringLiteral("unknown error");
            }
            postTo(target, [done = std::move(done), out = std::move(out)]() mutable {
                done(std::move(out));
            });
        });
}

}  // namespace tandem::ui
