// DownloadControl: cancel/pause shared between a UI thread and a running download.
#include "tandem/library/downloader.h"

namespace tandem::library {

void DownloadControl::cancel() {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
}
void DownloadControl::pause() {
    std::lock_guard lock(mu_);
    paused_ = true;
    cv_.notify_all();
}
void DownloadControl::resume() {
    std::lock_guard lock(mu_);
    paused_ = false;
    cv_.notify_all();
}
bool DownloadControl::wait_while_paused() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !paused_ || cancelled_; });
    return !cancelled_;
}
bool DownloadControl::wait_for(std::chrono::milliseconds d) {
    if (!wait_while_paused()) return false;
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d, [&] { return cancelled_.load(); });
    return !cancelled_;
}

std::filesystem::path part_path(const std::filesystem::path& dest) {
    auto p = dest;
    p += ".part";
    return p;
}
std::filesystem::path state_path(const std::filesystem::path& dest) {
    auto p = dest;
    p += ".part.json";
    return p;
}

}  // namespace tandem::library
