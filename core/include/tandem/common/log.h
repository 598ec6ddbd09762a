#pragma once
// One process-wide logger. Messages go to stderr by default; the app installs a sink that also
// shows them in the UI. Thread-safe.
#include <functional>
#include <string>
#include <string_view>

namespace tandem {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3 };

using LogSink = std::function<void(LogLevel, std::string_view)>;

void set_log_level(LogLevel level);
LogLevel log_level();
// Replaces the sink (nullptr restores stderr). Returns the previous one.
LogSink set_log_sink(LogSink sink);
void log_message(LogLevel level, std::string_view message);

inline void log_debug(std::string_view m) { log_message(LogLevel::Debug, m); }
inline void log_info(std::string_view m) { log_message(LogLevel::Info, m); }
inline void log_warn(std::string_view m) { log_message(LogLevel::Warn, m); }
inline void log_error(std::string_view m) { log_message(LogLevel::Error, m); }

}  // namespace tandem
