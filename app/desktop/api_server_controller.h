#pragma once
// The OpenAI-compatible API inside the app: the same ApiServer + HttpServer that
// `tandem-cli serve` runs, on 127.0.0.1, serving the chat's model through its own engine (the
// weights are mapped once by the OS; each engine has its own KV cache). Loading the model,
// binding the port and shutting down all happen on a background thread.
#include <QObject>
#include <QString>

#include <memory>

#include "generation_worker.h"

namespace tandem::server {
class ApiServer;
class HttpServer;
}  // namespace tandem::server

namespace tandem::ui {

class ApiServerController : public QObject {
    Q_OBJECT
  public:
    explicit ApiServerController(QObject* parent = nullptr);
    ~ApiServerController() override;  // stops the server (joins its threads)

    bool isRunning() const { return running_ != nullptr; }
    quint16 port() const { return port_; }
    QString url() const;
    QString modelId() const { return modelId_; }

  public slots:
    // Serves `modelPath` on 127.0.0.1:`port` (0: any free port). A running server is replaced.
    void start(const QString& modelPath, quint16 port, const tandem::ui::RuntimeChoice& runtime);
    void stop();

  signals:
    void started(const QString& url);
    void stopped();
    void failed(const QString& message);

  private:
    struct Running;
    std::shared_ptr<Running> running_;
    quint16 port_ = 0;
    QString modelId_;
    quint64 ticket_ = 0;
};

}  // namespace tandem::ui
