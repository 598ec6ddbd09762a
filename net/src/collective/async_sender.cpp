// A helper thread that runs one Transport::send at a time (see async_sender.h).
#include "collective/async_sender.h"

namespace tandem::net {

AsyncSender::~AsyncSender() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard l(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void AsyncSender::start(Transport& to, std::span<const uint8_t> message, Millis timeout) {
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    {
        std::lock_guard l(mu_);
        to_ = &to;
        message_ = message;
        timeout_ = timeout;
        error_ = nullptr;
        pending_ = true;
    }
    cv_.notify_all();
}

void AsyncSender::finish() {
    std::unique_lock l(mu_);
    cv_.wait(l, [&] { return !pending_; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void AsyncSender::run() {
    std::unique_lock l(mu_);
    for (;;) {
        cv_.wait(l, [&] { return stop_ || pending_; });
        if (stop_) return;
        l.unlock();
        std::exception_ptr err;
        try {
            to_->send(message_, timeout_);
        } catch (...) {
            err = std::current_exception();
        }
        l.lock();
        error_ = err;
        pending_ = false;
        cv_.notify_all();
    }
}

}  // namespace tandem::net
