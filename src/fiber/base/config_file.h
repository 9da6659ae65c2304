// The runtime's configuration from its three sources: the configuration file (fiber.yaml in the
// working directory, or the file FIBER_CONFIG names), FIBER_* environment variables, and the
// fiber::Config the program passes to fiber::init. The keys, their types, defaults and variables
// are listed in fiber/init.h. Internal; free of MPI, so it is tested on its own.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fiber/init.h"

namespace fiber::internal {

/// Reads one environment variable: its value, or nothing when it is not set.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// The lookup of this process's own environment.
EnvironmentLookup process_environment();

/// A Config assembled from its sources, with where each key's value came from.
struct ResolvedConfig {
  Config config;
  /// Absolute path of the configuration file that was applied; empty when there was none.
  std::string file;
  /// Key path ("spawn.env") to the source of its value: the file's path, the FIBER_* variable,
  /// or "fiber::Config". Keys left at their default are absent.
  std::map<std::string, std::string> origins;

  /// "heartbeat_timeout (from FIBER_HEARTBEAT_TIMEOUT_MS)", or "(default)" for keys no source set.
  std::string describe(const std::string& key) const;
  /// The source of `key`'s value: as in `origins`, or "default".
  std::string origin(const std::string& key) const;
};

/// The configuration file to apply: the one FIBER_CONFIG names (relative paths are taken from
/// `working_directory`; a file that does not exist is a fiber::ConfigError), else fiber.yaml in
/// `working_directory` if there is one, else nothing.
std::optional<std::filesystem::path> find_config_file(
    const EnvironmentLookup& environment, const std::filesystem::path& working_directory);

/// Applies the keys of YAML document `text` to `resolved`. `source` (the file's path) names the
/// document in errors. Throws fiber::ConfigError for a document that does not parse, an unknown
/// key, a value of the wrong type or out of range.
void apply_config_text(const std::string& text, const std::string& source,
                       ResolvedConfig& resolved);

/// Reads the file at `path` and applies it as apply_config_text does.
void apply_config_file(const std::filesystem::path& path, ResolvedConfig& resolved);

/// Applies every set FIBER_* variable of the keys (an empty one counts as unset).
void apply_config_environment(const EnvironmentLookup& environment, ResolvedConfig& resolved);

/// Applies the fields of `code` that differ from a default-constructed Config (see init.h).
void apply_config_code(const Config& code, ResolvedConfig& resolved);

/// Defaults, then the configuration file, then the environment, then `code`.
ResolvedConfig resolve_config(const Config& code, const EnvironmentLookup& environment,
                              const std::filesystem::path& working_directory);

/// Every key's path, in the order of fiber::Config ("spawn.env" for nested ones).
std::vector<std::string> config_keys();

/// The FIBER_* variable of key `key` (its path); throws std::out_of_range for an unknown key.
std::string config_environment_variable(const std::string& key);

/// Key `key`'s value in `config` as the configuration file would say it ("5000ms", "true",
/// "[a, b]", "{A: 1}"); throws std::out_of_range for an unknown key.
std::string config_value_text(const Config& config, const std::string& key);

}  // namespace fiber::internal
