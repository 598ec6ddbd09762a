#pragma once
// One app per user session: the first instance listens on a local socket; a later launch
// connects, says "raise", and exits, and the first one brings its window to the front.
#include <QLocalServer>
#include <QObject>
#include <QString>

namespace tandem::ui {

class SingleInstance : public QObject {
    Q_OBJECT
  public:
    // `key` names the socket (per user: the user name is added).
    explicit SingleInstance(const QString& key, QObject* parent = nullptr);

    // True when another instance answered (it was asked to raise its window; this one should
    // exit). Otherwise this instance starts listening and returns false.
    bool askRunningInstance(int timeoutMs = 500);
    QString socketName() const { return name_; }

  signals:
    // A later launch asked this instance to show itself.
    void raiseRequested();

  private:
    QString name_;
    QLocalServer server_;
};

}  // namespace tandem::ui
