#include "fiber/runtime/settings.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "fiber/errors.h"

namespace fiber::detail {
namespace {

// The integer value of environment variable `name`, if set.
std::optional<long> env_number(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  // Anything beyond a day (or a million workers) is a mistake, and would overflow clock sums.
  constexpr long kLargest = 86'400'000;
  if (*end != '\0' || errno == ERANGE || value < 0 || value > kLargest) {
    throw UsageError(std::string(name) + "='" + text + "' is not a whole number from 0 to " +
                     std::to_string(kLargest));
  }
  return value;
}

}  // namespace

Settings Settings::from(const Config& config) {
  Settings settings;
  static_cast<Config&>(settings) = config;

  if (auto value = env_number("FIBER_SPAWN_TIMEOUT_S"))
    settings.spawn_timeout = std::chrono::seconds(std::max(1L, *value));
  if (auto value = env_number("FIBER_HEARTBEAT_TIMEOUT_MS"))
    settings.heartbeat_timeout = std::chrono::milliseconds(std::max(1L, *value));
  if (auto value = env_number("FIBER_PID_CHECKS")) settings.pid_checks = *value != 0;
  if (auto value = env_number("FIBER_MIN_SPAWN_BATCH"))
    settings.min_spawn_batch = static_cast<int>(std::max(1L, *value));
  if (auto value = env_number("FIBER_RESERVE_MAX_IDLE"))
    settings.reserve_max_idle = static_cast<int>(std::max(0L, *value));
  if (auto value = env_number("FIBER_RESERVE_IDLE_TIMEOUT_S"))
    settings.reserve_idle_timeout = std::chrono::seconds(std::max(0L, *value));

  if (settings.liveness_interval.count() <= 0) {
    throw UsageError("fiber::Config: liveness_interval must be positive, got " +
                     std::to_string(settings.liveness_interval.count()) + " ms");
  }
  if (settings.heartbeat_interval.count() <= 0 ||
      settings.heartbeat_timeout <= settings.heartbeat_interval) {
    throw UsageError("fiber::Config: heartbeat_timeout (" +
                     std::to_string(settings.heartbeat_timeout.count()) +
                     " ms) must be longer than a positive heartbeat_interval (" +
                     std::to_string(settings.heartbeat_interval.count()) + " ms)");
  }
  if (settings.max_spawn_batch < 1 || settings.min_spawn_batch < 1 ||
      settings.reserve_max_idle < 0 || settings.processes_ahead < 0) {
    throw UsageError("fiber::Config: max_spawn_batch (" + std::to_string(settings.max_spawn_batch) +
                     ") and min_spawn_batch (" + std::to_string(settings.min_spawn_batch) +
                     ") must be at least 1, reserve_max_idle (" +
                     std::to_string(settings.reserve_max_idle) + ") and processes_ahead (" +
                     std::to_string(settings.processes_ahead) + ") at least 0");
  }
  if (settings.spawn_timeout.count() <= 0 || settings.spawn_timeout > std::chrono::hours(24) ||
      settings.heartbeat_timeout > std::chrono::hours(24) ||
      settings.reserve_idle_timeout > std::chrono::hours(24 * 365)) {
    throw UsageError("fiber::Config: spawn_timeout (" +
                     std::to_string(settings.spawn_timeout.count()) +
                     " s) must be positive, and it and heartbeat_timeout at most a day");
  }
  return settings;
}

}  // namespace fiber::detail
