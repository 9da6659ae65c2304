#include "fiber/engine/settings.h"

#include <system_error>

#include "fiber/base/fault_injection.h"
#include "fiber/errors.h"

namespace fiber::internal {

Settings Settings::from(const Config& config) {
  std::error_code error;
  std::filesystem::path working_directory = std::filesystem::current_path(error);
  // A working directory that was removed has no fiber.yaml.
  if (error) working_directory = ".";
  return from(config, process_environment(), working_directory);
}

Settings Settings::from(const Config& config, const EnvironmentLookup& environment,
                        const std::filesystem::path& working_directory) {
  const ResolvedConfig resolved = resolve_config(config, environment, working_directory);
  Settings settings;
  static_cast<Config&>(settings) = resolved.config;
  settings.config_file = resolved.file;
  if (const auto watchdog = finalize_watchdog_override()) settings.finalize_watchdog = *watchdog;

  // Each value was checked on its own; what is left are the rules that tie two keys together.
  if (settings.heartbeat_timeout <= settings.heartbeat_interval) {
    const char* key =
        resolved.origins.count("heartbeat_timeout") ? "heartbeat_timeout" : "heartbeat_interval";
    throw ConfigError(resolved.describe("heartbeat_timeout") + ", " +
                          std::to_string(settings.heartbeat_timeout.count()) +
                          " ms, must be longer than " + resolved.describe("heartbeat_interval") +
                          ", " + std::to_string(settings.heartbeat_interval.count()) + " ms",
                      resolved.origin(key), key);
  }
  return settings;
}

}  // namespace fiber::internal
