#include "k8s/client/log_sink.h"

#include <cstdio>
#include <string>

namespace fiber::k8s {
namespace {

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "log";
}

}  // namespace

LogSink stderr_log_sink() {
  return [](LogLevel level, std::string_view message) {
    // One fprintf per line so lines of different threads do not interleave.
    std::fprintf(stderr, "%s: %.*s\n", level_name(level), static_cast<int>(message.size()),
                 message.data());
  };
}

void log_to(const LogSink& sink, LogLevel level, std::string_view message) noexcept {
  if (!sink) return;
  try {
    sink(level, message);
  } catch (...) {
    // A broken sink must not turn a logged failure into a thrown one.
  }
}

}  // namespace fiber::k8s
