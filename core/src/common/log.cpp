#include "tandem/common/log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace tandem {
namespace {

LogLevel initial_level() {
    const char* env = std::getenv("TANDEM_LOG");
    if (!env) return LogLevel::Info;
    std::string v(env);
    if (v == "debug") return LogLevel::Debug;
    if (v == "warn") return LogLevel::Warn;
    if (v == "error") return LogLevel::Error;
    return LogLevel::Info;
}

struct LoggerState {
    std::mutex mu;
    LogLevel level = initial_level();
    LogSink sink;
};

LoggerState& state() {
    static LoggerState s;
    return s;
}

const char* level_name(LogLevel l) {
    switch (l) {
        case LogLevel::Debug: return "debug";
        case LogLevel::Info: return "info";
        case LogLevel::Warn: return "warning";
        case LogLevel::Error: return "error";
    }
    return "?";
}

}  // namespace

void set_log_level(LogLevel level) {
    std::lock_guard lock(state().mu);
    state().level = level;
}

LogLevel log_level() {
    std::lock_guard lock(state().mu);
    return state().level;
}

LogSink set_log_sink(LogSink sink) {
    std::lock_guard lock(state().mu);
    LogSink old = std::move(state().sink);
    state().sink = std::move(sink);
    return old;
}

void log_message(LogLevel level, std::string_view message) {
    auto& s = state();
    std::lock_guard lock(s.mu);
    if (level < s.level) return;
    if (s.sink) {
        s.sink(level, message);
        return;
    }
    std::fprintf(stderr, "tandem: %s: %.*s\n", level_name(level), static_cast<int>(message.size()),
                 message.data());
}

}  // namespace tandem
