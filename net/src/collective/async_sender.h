#pragma once
// One send running on a helper thread while the caller receives: a ring step sends to the right
// neighbour and receives from the left at once, which with blocking transports and messages
// larger than the socket or ring buffers would deadlock if every rank sent first.
#include <condition_variable>
#include <exception>
#include <mutex>
#include <span>
#include <thread>

#include "tandem/net/transport.h"

namespace tandem::net {

class AsyncSender {
  public:
    AsyncSender() = default;
    ~AsyncSender();
    AsyncSender(const AsyncSender&) = delete;
    AsyncSender& operator=(const AsyncSender&) = delete;

    // Starts sending `message` (which must stay alive until finish()) over `to`.
    void start(Transport& to, std::span<const uint8_t> message, Millis timeout);
    // Waits for the send started last; rethrows what it threw.
    void finish();

  private:
    void run();

    std::thread thread_;
    std::mutex mu_;
    std::condition_variable cv_;
    Transport* to_ = nullptr;
    std::span<const uint8_t> message_;
    Millis timeout_{0};
    bool pending_ = false, stop_ = false;
    std::exception_ptr error_;
};

}  // namespace tandem::net
