// Where the client library reports what it cannot throw to a caller (a watch that failed and is
// retried, an Event that could not be written). The controller plugs in its own logger.
#pragma once

#include <functional>
#include <string_view>

namespace fiber::k8s {

/// Severity of a library message.
enum class LogLevel { kInfo, kWarning, kError };

/// Receives one complete message; may be called from any of the library's threads at once.
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

/// A sink that writes "level: message" lines to stderr (the default of every component).
LogSink stderr_log_sink();

/// Calls `sink` when it is set; a sink that throws is ignored, so logging never fails the caller.
void log_to(const LogSink& sink, LogLevel level, std::string_view message) noexcept;

}  // namespace fiber::k8s
