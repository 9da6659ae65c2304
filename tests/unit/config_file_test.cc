// The runtime's configuration: the configuration file's keys and value types, the errors for bad
// ones, and the precedence default < file < FIBER_* variable < code.
#include "fiber/base/config_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fiber/engine/settings.h"
#include "fiber/errors.h"

namespace fiber::internal {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Variables = std::map<std::string, std::string>;
using EnvironmentList = std::vector<std::pair<std::string, std::string>>;

static_assert(std::is_base_of_v<UsageError, ConfigError>);

EnvironmentLookup lookup(Variables variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    const auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

// The Config a YAML document alone gives.
Config from_text(const std::string& text) {
  ResolvedConfig resolved;
  apply_config_text(text, "test.yaml", resolved);
  return resolved.config;
}

// The ConfigError `action` throws (a failure if it throws none, or another type).
ConfigError error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const ConfigError& error) {
    return error;
  } catch (const std::exception& error) {
    ADD_FAILURE() << "expected fiber::ConfigError, got: " << error.what();
    return ConfigError("", "", "");
  }
  ADD_FAILURE() << "no exception thrown";
  return ConfigError("", "", "");
}

ConfigError text_error(const std::string& text) {
  return error_of([&text] { from_text(text); });
}

#define EXPECT_HAS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "missing '" << (part) << "'"

// A fresh directory for configuration files, removed after the test.
class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "fiber-config-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
  }
  void TearDown() override { fs::remove_all(directory_); }

  fs::path write(const std::string& name, const std::string& text) {
    const fs::path path = directory_ / name;
    std::ofstream(path) << text;
    return path;
  }

  fs::path directory_;
};

// ---- Every key
// -----------------------------------------------------------------------------------

constexpr const char* kEveryKey = R"(
liveness_interval: 30
heartbeat_interval: 250ms
heartbeat_timeout: 7s
pid_checks: false
spawn_timeout: 2m
max_spawn_batch: 16
min_spawn_batch: 2
reserve_max_idle: 0
reserve_idle_timeout: 90
processes_ahead: 5
pod_start_timeout: 10m
pod_idle_timeout: 0
bind: none
log_level: debug
log_dir: /scratch/logs
spawn:
  executable: /opt/app/bin/worker
  args: [--lr, "3e-4"]
  host: node-1,node-2
  wdir: /scratch
  env:
    OMP_NUM_THREADS: 1
    MODE: fast
  oversubscribe: off
)";

void expect_every_key_set(const Config& config) {
  EXPECT_EQ(config.liveness_interval, 30ms);
  EXPECT_EQ(config.heartbeat_interval, 250ms);
  EXPECT_EQ(config.heartbeat_timeout, 7000ms);
  EXPECT_FALSE(config.pid_checks);
  EXPECT_EQ(config.spawn_timeout, 120s);
  EXPECT_EQ(config.max_spawn_batch, 16);
  EXPECT_EQ(config.min_spawn_batch, 2);
  EXPECT_EQ(config.reserve_max_idle, 0);
  EXPECT_EQ(config.reserve_idle_timeout, 90s);
  EXPECT_EQ(config.processes_ahead, 5);
  EXPECT_EQ(config.pod_start_timeout, 600s);
  EXPECT_EQ(config.pod_idle_timeout, 0s);
  EXPECT_EQ(config.bind, "none");
  EXPECT_EQ(config.log_level, "debug");
  EXPECT_EQ(config.log_dir, "/scratch/logs");
  EXPECT_EQ(config.spawn.executable, "/opt/app/bin/worker");
  EXPECT_EQ(config.spawn.args, (std::vector<std::string>{"--lr", "3e-4"}));
  EXPECT_EQ(config.spawn.host, "node-1,node-2");
  EXPECT_EQ(config.spawn.wdir, "/scratch");
  EXPECT_EQ(config.spawn.env, (EnvironmentList{{"OMP_NUM_THREADS", "1"}, {"MODE", "fast"}}));
  EXPECT_FALSE(config.spawn.oversubscribe);
}

TEST(ConfigKeys, DefaultsOfTheNewFields) {
  const Config config;
  EXPECT_EQ(config.pod_start_timeout, 300s);
  EXPECT_EQ(config.pod_idle_timeout, 30s);
  EXPECT_EQ(config.bind, "core");
  EXPECT_EQ(config.log_level, "warning");
  EXPECT_EQ(config.log_dir, "");
}

TEST(ConfigKeys, EveryKeyInTheFileIsRead) {
  ResolvedConfig resolved;
  apply_config_text(kEveryKey, "every.yaml", resolved);
  expect_every_key_set(resolved.config);
  // The document names every key there is, and each one's value is traced to the file.
  const auto keys = config_keys();
  EXPECT_EQ(keys.size(), 21u);
  for (const auto& key : keys) EXPECT_EQ(resolved.origin(key), "every.yaml") << key;
}

TEST(ConfigKeys, EveryKeyHasAVariable) {
  const Variables variables = {
      {"FIBER_LIVENESS_INTERVAL_MS", "30"},
      {"FIBER_HEARTBEAT_INTERVAL_MS", "250"},
      {"FIBER_HEARTBEAT_TIMEOUT_MS", "7000"},
      {"FIBER_PID_CHECKS", "0"},
      {"FIBER_SPAWN_TIMEOUT_S", "120"},
      {"FIBER_MAX_SPAWN_BATCH", "16"},
      {"FIBER_MIN_SPAWN_BATCH", "2"},
      {"FIBER_RESERVE_MAX_IDLE", "0"},
      {"FIBER_RESERVE_IDLE_TIMEOUT_S", "90"},
      {"FIBER_PROCESSES_AHEAD", "5"},
      {"FIBER_POD_START_TIMEOUT_S", "600"},
      {"FIBER_POD_IDLE_TIMEOUT_S", "0"},
      {"FIBER_BIND", "none"},
      {"FIBER_LOG_LEVEL", "debug"},
      {"FIBER_LOG_DIR", "/scratch/logs"},
      {"FIBER_SPAWN_EXECUTABLE", "/opt/app/bin/worker"},
      {"FIBER_SPAWN_ARGS", "[--lr, \"3e-4\"]"},
      {"FIBER_SPAWN_HOST", "node-1,node-2"},
      {"FIBER_SPAWN_WDIR", "/scratch"},
      {"FIBER_SPAWN_ENV", "{OMP_NUM_THREADS: 1, MODE: fast}"},
      {"FIBER_SPAWN_OVERSUBSCRIBE", "false"},
  };
  ResolvedConfig resolved;
  apply_config_environment(lookup(variables), resolved);
  expect_every_key_set(resolved.config);
  for (const auto& key : config_keys()) {
    EXPECT_EQ(resolved.origin(key), config_environment_variable(key)) << key;
    EXPECT_EQ(variables.count(config_environment_variable(key)), 1u) << key;
  }
}

TEST(ConfigKeys, EmptyVariableCountsAsUnset) {
  ResolvedConfig resolved;
  apply_config_environment(lookup({{"FIBER_HEARTBEAT_TIMEOUT_MS", ""}}), resolved);
  EXPECT_EQ(resolved.config.heartbeat_timeout, 5000ms);
  EXPECT_EQ(resolved.origin("heartbeat_timeout"), "default");
}

TEST(ConfigKeys, EmptyDocumentChangesNothing) {
  const Config config = from_text("# nothing here\n");
  EXPECT_EQ(config.heartbeat_timeout, Config{}.heartbeat_timeout);
  EXPECT_TRUE(config.spawn.env.empty());
  EXPECT_EQ(from_text("spawn:\n").spawn.oversubscribe, true);
}

// ---- Value types
// ---------------------------------------------------------------------------------

TEST(ConfigValues, DurationsInMilliseconds) {
  const std::vector<std::pair<std::string, std::chrono::milliseconds>> cases = {
      {"1500", 1500ms},    {"1500ms", 1500ms}, {"1.5s", 1500ms},   {"2m", 120'000ms},
      {"1h", 3'600'000ms}, {"5 s", 5000ms},    {"\"250\"", 250ms}, {"0.5s", 500ms},
  };
  for (const auto& [text, expected] : cases) {
    EXPECT_EQ(from_text("heartbeat_timeout: " + text).heartbeat_timeout, expected) << text;
  }
}

TEST(ConfigValues, DurationsInSeconds) {
  EXPECT_EQ(from_text("spawn_timeout: 90").spawn_timeout, 90s);
  EXPECT_EQ(from_text("spawn_timeout: 2m").spawn_timeout, 120s);
  EXPECT_EQ(from_text("spawn_timeout: 3000ms").spawn_timeout, 3s);
  EXPECT_EQ(from_text("reserve_idle_timeout: 0").reserve_idle_timeout, 0s);
  const auto error = text_error("spawn_timeout: 1500ms");
  EXPECT_HAS(error.what(), "'1500ms' is not a whole number of seconds");
  EXPECT_HAS(text_error("pod_start_timeout: 0.5").what(), "not a whole number");
}

TEST(ConfigValues, BadDurations) {
  for (const std::string text : {"abc", "5 parsecs", "5s extra", "ms", "\"\"", ".inf"}) {
    const auto error = text_error("heartbeat_timeout: " + text);
    EXPECT_HAS(error.what(), "is not a duration") << text;
    EXPECT_HAS(error.what(), "500ms, 5s, 2m, 1h");
    EXPECT_EQ(error.key(), "heartbeat_timeout");
  }
  EXPECT_HAS(text_error("heartbeat_timeout: -1s").what(), "out of range");
  EXPECT_HAS(text_error("heartbeat_timeout: 0").what(), "from 1 ms to 86400000 ms");
  EXPECT_HAS(text_error("spawn_timeout: 2d").what(), "is not a duration");
  EXPECT_HAS(text_error("spawn_timeout: 25h").what(), "from 1 s to 86400 s");
  EXPECT_HAS(text_error("heartbeat_timeout: [5s]").what(), "expected a duration");
  EXPECT_HAS(text_error("heartbeat_timeout: {a: 1}").what(), "got a mapping");
  EXPECT_HAS(text_error("heartbeat_timeout:").what(), "got no value");
}

TEST(ConfigValues, Booleans) {
  for (const std::string text : {"true", "yes", "on", "1", "True"}) {
    EXPECT_TRUE(from_text("spawn: {oversubscribe: " + text + "}").spawn.oversubscribe) << text;
  }
  for (const std::string text : {"false", "no", "off", "0", "False"}) {
    EXPECT_FALSE(from_text("pid_checks: " + text).pid_checks) << text;
  }
  for (const std::string text : {"maybe", "2", "[true]"}) {
    const auto error = text_error("pid_checks: " + text);
    EXPECT_HAS(error.what(), "boolean") << text;
    EXPECT_EQ(error.key(), "pid_checks");
  }
}

TEST(ConfigValues, Integers) {
  EXPECT_EQ(from_text("max_spawn_batch: 12").max_spawn_batch, 12);
  EXPECT_EQ(from_text("processes_ahead: \"3\"").processes_ahead, 3);
  for (const std::string text : {"1.5", "abc", "12 workers", "true"}) {
    EXPECT_HAS(text_error("max_spawn_batch: " + text).what(), "is not a whole number") << text;
  }
  EXPECT_HAS(text_error("max_spawn_batch: 0").what(), "'0' is out of range: it must be from 1");
  EXPECT_HAS(text_error("reserve_max_idle: -1").what(), "must be from 0 to 1000000");
  EXPECT_HAS(text_error("min_spawn_batch: 99999999999999999999").what(),
             "out of range: it must be from 1 to 1000000");
  EXPECT_HAS(text_error("processes_ahead: [1]").what(), "expected a whole number, got a list");
}

TEST(ConfigValues, Strings) {
  EXPECT_EQ(from_text("spawn: {host: 123}").spawn.host, "123");
  EXPECT_EQ(from_text("spawn: {wdir: \"\"}").spawn.wdir, "");
  const auto error = text_error("spawn:\n  wdir: [/a, /b]\n");
  EXPECT_HAS(error.what(), "key 'spawn.wdir': expected a string, got a list");
  EXPECT_EQ(error.key(), "spawn.wdir");
}

// ---- Nested spawn keys -------------------------------------------------------------------------

TEST(ConfigSpawn, ArgsAndEnvironment) {
  const Config config = from_text(
      "spawn:\n  args:\n    - --epochs\n    - 3\n  env: {B: 2, A: \"x y\", EMPTY: \"\"}\n");
  EXPECT_EQ(config.spawn.args, (std::vector<std::string>{"--epochs", "3"}));
  // The variables keep the file's order.
  EXPECT_EQ(config.spawn.env, (EnvironmentList{{"B", "2"}, {"A", "x y"}, {"EMPTY", ""}}));
}

TEST(ConfigSpawn, BadNestedValues) {
  auto error = text_error("spawn:\n  env:\n    A: [1, 2]\n");
  EXPECT_HAS(error.what(), "test.yaml, line 3");
  EXPECT_HAS(error.what(), "key 'spawn.env': variable A must have a string value");
  EXPECT_EQ(error.key(), "spawn.env");
  EXPECT_HAS(text_error("spawn:\n  env:\n    A:\n").what(), "write A: \"\" for an empty one");
  EXPECT_HAS(text_error("spawn: {env: [A=1]}").what(),
             "expected a mapping of variable names to values");
  EXPECT_HAS(text_error("spawn: {args: --verbose}").what(), "expected a list of strings");
  EXPECT_HAS(text_error("spawn: {args: [[a]]}").what(), "item 1 must be a string");
  error = text_error("spawn: 5");
  EXPECT_HAS(error.what(), "key 'spawn' must be a mapping of its keys (spawn.executable");
  EXPECT_EQ(error.key(), "spawn");
}

TEST(ConfigSpawn, UnknownNestedKeyListsTheSectionsKeys) {
  const auto error = text_error("spawn:\n  enviroment: {A: 1}\n");
  EXPECT_HAS(error.what(), "test.yaml, line 2: unknown key 'spawn.enviroment'");
  EXPECT_HAS(error.what(),
             "valid keys: spawn.executable, spawn.args, spawn.host, spawn.wdir, "
             "spawn.env, spawn.oversubscribe");
  EXPECT_EQ(error.key(), "spawn.enviroment");
}

// ---- Errors in the document
// ----------------------------------------------------------------------

TEST_F(ConfigFileTest, UnknownKeyNamesFileKeyAndValidKeys) {
  const fs::path path = write("fiber.yaml", "pid_checks: true\nheartbeat_timout: 5s\n");
  ResolvedConfig resolved;
  const auto error = error_of([&] { apply_config_file(path, resolved); });
  const std::string message = error.what();
  EXPECT_HAS(message, "configuration file " + path.string() + ", line 2");
  EXPECT_HAS(message, "unknown key 'heartbeat_timout'");
  EXPECT_HAS(message, "did you mean 'heartbeat_timeout'?");
  for (const auto& key :
       {"spawn", "liveness_interval", "heartbeat_interval", "heartbeat_timeout", "pid_checks",
        "spawn_timeout", "max_spawn_batch", "min_spawn_batch", "reserve_max_idle",
        "reserve_idle_timeout", "processes_ahead", "pod_start_timeout", "pod_idle_timeout"}) {
    EXPECT_HAS(message.substr(message.find("valid keys:")), key);
  }
  EXPECT_EQ(error.source(), path.string());
  EXPECT_EQ(error.key(), "heartbeat_timout");
}

TEST(ConfigErrors, KeyOfAnotherSectionIsSuggested) {
  EXPECT_HAS(text_error("env: {A: 1}").what(), "did you mean 'spawn.env'?");
  EXPECT_HAS(text_error("spawn: {environment: {A: 1}}").what(), "did you mean 'spawn.env'?");
  EXPECT_HAS(text_error("spawn: {exec: /bin/true}").what(), "did you mean 'spawn.executable'?");
  EXPECT_HAS(text_error("spawn_timeout_s: 5").what(), "did you mean 'spawn_timeout'?");
  EXPECT_EQ(std::string(text_error("colour: blue").what()).find("did you mean"), std::string::npos);
}

TEST(ConfigErrors, WrongTypeNamesFileLineAndKey) {
  const auto error = text_error("pid_checks: true\n\nmin_spawn_batch: lots\n");
  EXPECT_HAS(error.what(),
             "configuration file test.yaml, line 3: key 'min_spawn_batch': "
             "'lots' is not a whole number");
  EXPECT_EQ(error.source(), "test.yaml");
}

TEST(ConfigErrors, MalformedYaml) {
  const auto error = text_error("pid_checks: true\nspawn: {env: {A: 1}\nmin_spawn_batch: 2\n");
  EXPECT_HAS(error.what(),
             "configuration file test.yaml is not valid YAML: yaml-cpp: error at line");
  EXPECT_EQ(error.source(), "test.yaml");
  EXPECT_HAS(text_error("a: b: c\n").what(), "error at line 1");
}

TEST(ConfigErrors, DocumentMustBeAMapping) {
  const auto error = text_error("- pid_checks\n- spawn\n");
  EXPECT_HAS(error.what(), "the document must be a mapping of keys to values, got a list");
  EXPECT_HAS(error.what(), "valid keys: spawn, liveness_interval");
}

TEST(ConfigErrors, DuplicateKey) {
  const auto error = text_error("pid_checks: true\nmin_spawn_batch: 1\npid_checks: false\n");
  EXPECT_HAS(error.what(), "line 3: key 'pid_checks' appears twice (first on line 1)");
}

TEST(ConfigErrors, BadVariableNamesVariableAndKey) {
  ResolvedConfig resolved;
  auto error = error_of([&] {
    apply_config_environment(lookup({{"FIBER_HEARTBEAT_TIMEOUT_MS", "soon"}}), resolved);
  });
  EXPECT_HAS(error.what(),
             "environment variable FIBER_HEARTBEAT_TIMEOUT_MS='soon' (key "
             "'heartbeat_timeout'): 'soon' is not a duration");
  EXPECT_EQ(error.source(), "FIBER_HEARTBEAT_TIMEOUT_MS");
  error = error_of([&] {
    apply_config_environment(lookup({{"FIBER_SPAWN_ENV", "{A: [1"}}), resolved);
  });
  EXPECT_HAS(error.what(), "FIBER_SPAWN_ENV='{A: [1' (key 'spawn.env'): not a YAML mapping");
  EXPECT_HAS(error.what(), "line 1");
  error = error_of([&] {
    apply_config_environment(lookup({{"FIBER_SPAWN_ARGS", "--fast"}}), resolved);
  });
  EXPECT_HAS(error.what(), "expected a list of strings");
  // A count that used to be clamped is now refused.
  error = error_of([&] {
    apply_config_environment(lookup({{"FIBER_SPAWN_TIMEOUT_S", "0"}}), resolved);
  });
  EXPECT_HAS(error.what(), "from 1 s to 86400 s");
}

TEST(ConfigErrors, BadCodeValueNamesTheField) {
  Config code;
  code.max_spawn_batch = 0;
  ResolvedConfig resolved;
  const auto error = error_of([&] { apply_config_code(code, resolved); });
  EXPECT_HAS(error.what(), "fiber::Config field 'max_spawn_batch': 0 is out of range");
  EXPECT_EQ(error.source(), "fiber::Config");
  code = Config{};
  code.spawn.env = {{"", "x"}};
  EXPECT_HAS(error_of([&] { apply_config_code(code, resolved); }).what(),
             "a variable name must be a non-empty string");
}

// ---- Finding the file
// ----------------------------------------------------------------------------

TEST_F(ConfigFileTest, NoFileIsFine) {
  EXPECT_FALSE(find_config_file(lookup({}), directory_));
  const Settings settings = Settings::from(Config{}, lookup({}), directory_);
  EXPECT_TRUE(settings.config_file.empty());
  EXPECT_EQ(settings.heartbeat_timeout, 5000ms);
}

TEST_F(ConfigFileTest, FiberYamlInTheWorkingDirectory) {
  write("fiber.yaml", "min_spawn_batch: 1\n");
  const Settings settings = Settings::from(Config{}, lookup({}), directory_);
  EXPECT_EQ(settings.min_spawn_batch, 1);
  EXPECT_EQ(settings.config_file, (directory_ / "fiber.yaml").string());
}

TEST_F(ConfigFileTest, FiberConfigWinsOverTheWorkingDirectorysFile) {
  write("fiber.yaml", "min_spawn_batch: 1\n");
  const fs::path other = write("other.yaml", "min_spawn_batch: 3\n");
  Settings settings = Settings::from(Config{}, lookup({{"FIBER_CONFIG", other}}), directory_);
  EXPECT_EQ(settings.min_spawn_batch, 3);
  EXPECT_EQ(settings.config_file, other.string());
  // A relative path is taken from the working directory.
  settings = Settings::from(Config{}, lookup({{"FIBER_CONFIG", "other.yaml"}}), directory_);
  EXPECT_EQ(settings.min_spawn_batch, 3);
}

TEST_F(ConfigFileTest, ProcessEnvironmentIsRead) {
  const fs::path path = write("job.yaml", "processes_ahead: 7\n");
  ASSERT_EQ(::setenv("FIBER_CONFIG", path.c_str(), 1), 0);
  ASSERT_EQ(::setenv("FIBER_PROCESSES_AHEAD", "", 1), 0);
  const Settings settings = Settings::from(Config{});
  ::unsetenv("FIBER_CONFIG");
  ::unsetenv("FIBER_PROCESSES_AHEAD");
  EXPECT_EQ(settings.processes_ahead, 7);
  EXPECT_EQ(settings.config_file, path.string());
  EXPECT_FALSE(process_environment()("FIBER_CONFIG"));
}

TEST_F(ConfigFileTest, FiberConfigNamingAMissingFile) {
  const std::string missing = (directory_ / "missing.yaml").string();
  const auto error = error_of([&] {
    Settings::from(Config{}, lookup({{"FIBER_CONFIG", missing}}), directory_);
  });
  EXPECT_HAS(error.what(),
             "FIBER_CONFIG=" + missing + " names a configuration file that does not exist");
  EXPECT_EQ(error.source(), "FIBER_CONFIG");
}

TEST_F(ConfigFileTest, FiberConfigNamingADirectory) {
  const auto error = error_of([&] {
    Settings::from(Config{}, lookup({{"FIBER_CONFIG", directory_}}), directory_);
  });
  EXPECT_HAS(error.what(), "is a directory");
}

TEST_F(ConfigFileTest, BadFileStopsSettings) {
  write("fiber.yaml", "spawn:\n  oversubscribe: sometimes\n");
  const auto error = error_of([&] { Settings::from(Config{}, lookup({}), directory_); });
  EXPECT_HAS(error.what(), (directory_ / "fiber.yaml").string() +
                               ", line 2: key "
                               "'spawn.oversubscribe'");
}

// ---- Precedence
// ----------------------------------------------------------------------------------

TEST_F(ConfigFileTest, FileThenEnvironmentThenCode) {
  write("fiber.yaml",
        "heartbeat_timeout: 7s\nspawn_timeout: 50\nmin_spawn_batch: 2\nreserve_max_idle: 5\n"
        "processes_ahead: 4\n");
  Config code;
  code.heartbeat_timeout = 9s;
  code.reserve_max_idle = 3;
  const Variables variables = {{"FIBER_HEARTBEAT_TIMEOUT_MS", "8000"},
                               {"FIBER_SPAWN_TIMEOUT_S", "60"},
                               {"FIBER_RESERVE_MAX_IDLE", "0"}};
  const ResolvedConfig resolved = resolve_config(code, lookup(variables), directory_);
  const std::string file = (directory_ / "fiber.yaml").string();
  // All three set it: the code wins.
  EXPECT_EQ(resolved.config.heartbeat_timeout, 9000ms);
  EXPECT_EQ(resolved.origin("heartbeat_timeout"), "fiber::Config");
  EXPECT_EQ(resolved.config.reserve_max_idle, 3);
  // File and variable: the variable wins.
  EXPECT_EQ(resolved.config.spawn_timeout, 60s);
  EXPECT_EQ(resolved.origin("spawn_timeout"), "FIBER_SPAWN_TIMEOUT_S");
  // The file alone.
  EXPECT_EQ(resolved.config.min_spawn_batch, 2);
  EXPECT_EQ(resolved.config.processes_ahead, 4);
  EXPECT_EQ(resolved.origin("min_spawn_batch"), file);
  // Nobody.
  EXPECT_EQ(resolved.config.max_spawn_batch, 8);
  EXPECT_EQ(resolved.origin("max_spawn_batch"), "default");
  EXPECT_EQ(resolved.describe("max_spawn_batch"), "max_spawn_batch (default)");
}

TEST_F(ConfigFileTest, CodeAtTheDefaultValueDoesNotOverride) {
  write("fiber.yaml", "pid_checks: false\nspawn_timeout: 50\n");
  Config code;
  code.pid_checks = true;     // the default: cannot be told from "not set"
  code.spawn_timeout = 120s;  // the default too
  const Settings settings =
      Settings::from(code, lookup({{"FIBER_SPAWN_TIMEOUT_S", "70"}}), directory_);
  EXPECT_FALSE(settings.pid_checks);
  EXPECT_EQ(settings.spawn_timeout, 70s);
}

TEST_F(ConfigFileTest, SpawnEnvironmentMergesByName) {
  write("fiber.yaml", "spawn:\n  env: {A: file, B: file}\n  args: [--from-file]\n");
  Config code;
  code.spawn.env = {{"C", "code"}, {"D", "code"}};
  const ResolvedConfig resolved =
      resolve_config(code, lookup({{"FIBER_SPAWN_ENV", "{B: env, C: env}"}}), directory_);
  EXPECT_EQ(resolved.config.spawn.env,
            (EnvironmentList{{"A", "file"}, {"B", "env"}, {"C", "code"}, {"D", "code"}}));
  EXPECT_EQ(resolved.origin("spawn.env"), "fiber::Config");
  EXPECT_EQ(resolved.config.spawn.args, (std::vector<std::string>{"--from-file"}));
}

TEST_F(ConfigFileTest, RulesBetweenKeysNameTheSources) {
  write("fiber.yaml", "heartbeat_interval: 6s\n");
  const auto error = error_of([&] { Settings::from(Config{}, lookup({}), directory_); });
  EXPECT_HAS(error.what(),
             "heartbeat_timeout (default), 5000 ms, must be longer than "
             "heartbeat_interval (from " +
                 (directory_ / "fiber.yaml").string() + "), 6000 ms");
  EXPECT_EQ(error.key(), "heartbeat_interval");
  // The variable fixes it.
  const Settings settings =
      Settings::from(Config{}, lookup({{"FIBER_HEARTBEAT_TIMEOUT_MS", "30000"}}), directory_);
  EXPECT_EQ(settings.heartbeat_timeout, 30s);
}

}  // namespace
}  // namespace fiber::internal
