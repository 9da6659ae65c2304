// The runtime's one log sink. Every line the runtime writes for people (a worker declared dead,
// a refused worker, a spawn that is stuck, each worker's binding) goes through it, at a level,
// with the time, the host and who wrote it:
//   fibermpi 2026-12-04 02:31:07.123 node-1 master[4242] warning: worker pid 4250 ... dead
// Lines go to stderr, and, with a log directory, also to a file of the process's own there
// (DIR/fibermpi-HOST-ROLE-PID.log: one per worker). The level is FIBER_LOG_LEVEL, `log_level:` in
// fiber.yaml or Config::log_level (debug, info, warning: the default, error, off); FIBER_QUIET=1
// leaves errors only, whatever the level. Each line is one write(), so lines of concurrent threads
// and processes never interleave. Free of MPI. Internal.
#pragma once

#include <cstddef>
#include <string>

namespace fiber::internal {

enum class LogLevel { kDebug, kInfo, kWarning, kError, kOff };

/// "debug", "info", "warning", "error", "off" as a level; nothing for any other text.
bool parse_log_level(const std::string& text, LogLevel* level);
const char* log_level_name(LogLevel level);

/// Sets the level and the directory of per-process log files ("" for none) once the
/// configuration is resolved (fiber::init). Until then the sink follows FIBER_LOG_LEVEL,
/// FIBER_LOG_DIR and FIBER_QUIET as they are in the environment.
void configure_log(LogLevel level, const std::string& directory);
/// Who this process is in the lines it writes: "master", "worker", "rank3". Before it is said,
/// "fibermpi".
void set_log_role(const std::string& role);

/// Writes all of `size` bytes to `fd`, again after EINTR and short writes; gives up on an error.
void write_fully(int fd, const char* data, size_t size);

/// True when a line at `level` would be written (to skip building an expensive one).
bool log_enabled(LogLevel level);

/// Writes one line (printf-style; no trailing newline needed).
void log_line(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

#define FIBER_LOG_DEBUG(...) \
  ::fiber::internal::log_line(::fiber::internal::LogLevel::kDebug, __VA_ARGS__)
#define FIBER_LOG_INFO(...) \
  ::fiber::internal::log_line(::fiber::internal::LogLevel::kInfo, __VA_ARGS__)
#define FIBER_LOG_WARNING(...) \
  ::fiber::internal::log_line(::fiber::internal::LogLevel::kWarning, __VA_ARGS__)
#define FIBER_LOG_ERROR(...) \
  ::fiber::internal::log_line(::fiber::internal::LogLevel::kError, __VA_ARGS__)

}  // namespace fiber::internal
