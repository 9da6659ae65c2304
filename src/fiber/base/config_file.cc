#include "fiber/base/config_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "fiber/base/log.h"
#include "fiber/errors.h"

namespace fiber::internal {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using EnvironmentList = std::vector<std::pair<std::string, std::string>>;

constexpr const char* kCodeSource = "fiber::Config";
constexpr long long kMostProcesses = 1'000'000;
constexpr milliseconds kOneDay = std::chrono::hours(24);
constexpr seconds kOneDayInSeconds = std::chrono::hours(24);
constexpr seconds kOneYear = std::chrono::hours(24 * 365);

// A value that cannot be used. The caller adds where it came from (file and line, variable, or
// code) and the key.
class BadValue : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string describe_node(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    default:
      return "no value";
  }
}

// The text of a scalar node; anything else is the wrong type.
std::string scalar_text(const YAML::Node& node, std::string_view expected) {
  if (!node.IsScalar()) {
    throw BadValue("expected " + std::string(expected) + ", got " + describe_node(node));
  }
  return node.Scalar();
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

// ---- Value types -------------------------------------------------------------------------------

template <class Duration>
constexpr std::string_view unit_name() {
  if constexpr (std::is_same_v<Duration, milliseconds>) {
    return "ms";
  } else {
    static_assert(std::is_same_v<Duration, seconds>);
    return "s";
  }
}

template <class Duration>
std::string show(Duration value) {
  return std::to_string(value.count()) + " " + std::string(unit_name<Duration>());
}

template <class Duration>
std::string unit_in_words() {
  return std::is_same_v<Duration, milliseconds> ? "milliseconds" : "seconds";
}

template <class Duration>
std::string duration_help() {
  return "write a whole number of " + unit_in_words<Duration>() +
         ", or a number with a unit: 500ms, 5s, 2m, 1h";
}

// How many milliseconds one of each unit a duration may be written with is.
double unit_milliseconds(std::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1'000;
  if (unit == "m" || unit == "min") return 60'000;
  if (unit == "h") return 3'600'000;
  return 0;
}

// A duration written as a plain number in the field's unit, or as a number with a unit.
template <class Duration>
Duration parse_duration(const YAML::Node& node, Duration lowest, Duration highest) {
  const std::string text = scalar_text(node, "a duration (" + duration_help<Duration>() + ")");
  const std::string_view value = trimmed(text);
  double number = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  const std::string_view unit = trimmed(std::string_view(end, value.data() + value.size()));
  const double per_unit =
      unit.empty() ? unit_milliseconds(unit_name<Duration>()) : unit_milliseconds(unit);
  if (error != std::errc() || !std::isfinite(number) || per_unit == 0) {
    throw BadValue("'" + text + "' is not a duration (" + duration_help<Duration>() + ")");
  }
  const double count = number * per_unit / unit_milliseconds(unit_name<Duration>());
  if (count < static_cast<double>(lowest.count()) - 0.5 ||
      count > static_cast<double>(highest.count()) + 0.5) {
    throw BadValue("'" + text + "' is out of range: it must be from " + show(lowest) + " to " +
                   show(highest));
  }
  const double whole = std::round(count);
  if (std::abs(count - whole) > 1e-6) {
    throw BadValue("'" + text + "' is not a whole number of " + unit_in_words<Duration>() + " (" +
                   duration_help<Duration>() + ")");
  }
  return Duration(static_cast<typename Duration::rep>(whole));
}

template <class Duration>
void check_duration(Duration value, Duration lowest, Duration highest) {
  if (value < lowest || value > highest) {
    throw BadValue(show(value) + " is out of range: it must be from " + show(lowest) + " to " +
                   show(highest));
  }
}

std::string count_range(int lowest, int highest) {
  return "it must be from " + std::to_string(lowest) + " to " + std::to_string(highest);
}

int parse_count(const YAML::Node& node, int lowest, int highest) {
  const std::string text = scalar_text(node, "a whole number");
  const std::string_view value = trimmed(text);
  long long number = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  const bool whole = end == value.data() + value.size();
  if (error == std::errc::result_out_of_range ||
      (error == std::errc() && whole && (number < lowest || number > highest))) {
    throw BadValue("'" + text + "' is out of range: " + count_range(lowest, highest));
  }
  if (error != std::errc() || !whole) throw BadValue("'" + text + "' is not a whole number");
  return static_cast<int>(number);
}

void check_count(int value, int lowest, int highest) {
  if (value < lowest || value > highest) {
    throw BadValue(std::to_string(value) + " is out of range: " + count_range(lowest, highest));
  }
}

bool parse_switch(const YAML::Node& node) {
  const std::string text = scalar_text(node, "a boolean (true or false)");
  std::string word(trimmed(text));
  std::transform(word.begin(), word.end(), word.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (word == "true" || word == "yes" || word == "on" || word == "1") return true;
  if (word == "false" || word == "no" || word == "off" || word == "0") return false;
  throw BadValue("'" + text + "' is not a boolean (write true or false)");
}

std::string parse_text(const YAML::Node& node) { return scalar_text(node, "a string"); }

std::vector<std::string> parse_text_list(const YAML::Node& node) {
  if (!node.IsSequence()) {
    throw BadValue("expected a list of strings (e.g. [--lr, \"3e-4\"]), got " +
                   describe_node(node));
  }
  std::vector<std::string> items;
  for (const auto& item : node) {
    if (!item.IsScalar()) {
      throw BadValue("item " + std::to_string(items.size() + 1) + " must be a string, got " +
                     describe_node(item));
    }
    items.push_back(item.Scalar());
  }
  return items;
}

EnvironmentList parse_environment_mapping(const YAML::Node& node) {
  if (!node.IsMap()) {
    throw BadValue(
        "expected a mapping of variable names to values (e.g. {OMP_NUM_THREADS: 1}), "
        "got " +
        describe_node(node));
  }
  EnvironmentList variables;
  for (const auto& entry : node) {
    const YAML::Node& name = entry.first;
    const YAML::Node& value = entry.second;
    if (!name.IsScalar() || name.Scalar().empty() || name.Scalar().find('=') != std::string::npos) {
      throw BadValue("a variable name must be a non-empty string without '=', got " +
                     describe_node(name));
    }
    if (!value.IsScalar()) {
      throw BadValue("variable " + name.Scalar() + " must have a string value (write " +
                     name.Scalar() + ": \"\" for an empty one), got " + describe_node(value));
    }
    variables.emplace_back(name.Scalar(), value.Scalar());
  }
  return variables;
}

void check_environment_names(const EnvironmentList& variables) {
  for (const auto& [name, value] : variables) {
    if (name.empty() || name.find('=') != std::string::npos) {
      throw BadValue("a variable name must be a non-empty string without '=', got '" + name + "'");
    }
  }
}

// Later variables replace earlier ones of the same name, so each source overrides by name.
void merge_environment(EnvironmentList& into, const EnvironmentList& from) {
  for (const auto& [name, value] : from) {
    auto same = std::find_if(into.begin(), into.end(),
                             [&name = name](const auto& entry) { return entry.first == name; });
    if (same != into.end()) {
      same->second = value;
    } else {
      into.emplace_back(name, value);
    }
  }
}

// ---- The keys ----------------------------------------------------------------------------------

// One key: its path, its FIBER_* variable, and how a value from each source reaches a Config.
struct Key {
  std::string path;
  std::string variable;
  /// The variable holds a YAML flow value (a list or a mapping) instead of a plain one.
  bool structured = false;
  /// Parses, checks and stores a value (throws BadValue).
  std::function<void(const YAML::Node&, Config&)> read;
  /// Stores the value of the code's Config if it differs from the default; tells whether it did.
  std::function<bool(const Config& code, Config&)> take_from_code;
  /// The key's value in a Config, as a YAML node that reads back to the same value.
  std::function<YAML::Node(const Config&)> node;
};

// A value as the configuration file would say it.
YAML::Node value_node(const std::string& value) { return YAML::Node(value); }
YAML::Node value_node(bool value) { return YAML::Node(value); }
YAML::Node value_node(int value) { return YAML::Node(value); }
YAML::Node value_node(milliseconds value) {
  return YAML::Node(std::to_string(value.count()) + "ms");
}
YAML::Node value_node(seconds value) { return YAML::Node(std::to_string(value.count()) + "s"); }
YAML::Node value_node(const std::vector<std::string>& values) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (const auto& value : values) list.push_back(value);
  return list;
}
YAML::Node value_node(const EnvironmentList& variables) {
  YAML::Node mapping(YAML::NodeType::Map);
  for (const auto& [name, value] : variables) mapping[name] = value;
  return mapping;
}

struct Assign {
  template <class T>
  void operator()(T& into, const T& value) const {
    into = value;
  }
};

struct MergeEnvironment {
  void operator()(EnvironmentList& into, const EnvironmentList& value) const {
    merge_environment(into, value);
  }
};

// `access(config)` is the field (a generic lambda, so it serves const and mutable Configs).
template <class Access, class Parse, class Check, class Store = Assign>
Key make_key(std::string path, std::string variable, Access access, Parse parse, Check check,
             bool structured = false, Store store = {}) {
  Key key;
  key.path = std::move(path);
  key.variable = std::move(variable);
  key.structured = structured;
  key.read = [access, parse, check, store](const YAML::Node& node, Config& config) {
    const auto value = parse(node);
    check(value);
    store(access(config), value);
  };
  key.take_from_code = [access, check, store](const Config& code, Config& config) {
    const Config defaults;
    const auto& value = access(code);
    if (value == access(defaults)) return false;
    check(value);
    store(access(config), value);
    return true;
  };
  key.node = [access](const Config& config) { return value_node(access(config)); };
  return key;
}

template <class Duration, class Access>
Key duration_key(std::string path, std::string variable, Access access, Duration lowest,
                 Duration highest) {
  return make_key(
      std::move(path), std::move(variable), access,
      [lowest, highest](const YAML::Node& node) {
        return parse_duration<Duration>(node, lowest, highest);
      },
      [lowest, highest](Duration value) { check_duration(value, lowest, highest); });
}

template <class Access>
Key count_key(std::string path, std::string variable, Access access, int lowest) {
  constexpr int highest = static_cast<int>(kMostProcesses);
  return make_key(
      std::move(path), std::move(variable), access,
      [lowest](const YAML::Node& node) { return parse_count(node, lowest, highest); },
      [lowest](int value) { check_count(value, lowest, highest); });
}

template <class Access>
Key switch_key(std::string path, std::string variable, Access access) {
  return make_key(std::move(path), std::move(variable), access, parse_switch, [](bool) {});
}

template <class Access>
Key text_key(std::string path, std::string variable, Access access) {
  return make_key(std::move(path), std::move(variable), access, parse_text,
                  [](const std::string&) {});
}

std::vector<Key> make_keys() {
  std::vector<Key> keys;
  keys.push_back(text_key(
      "spawn.executable", "FIBER_SPAWN_EXECUTABLE",
      [](auto& config) -> auto& { return config.spawn.executable; }));
  keys.push_back(make_key(
      "spawn.args", "FIBER_SPAWN_ARGS", [](auto& config) -> auto& { return config.spawn.args; },
      parse_text_list, [](const std::vector<std::string>&) {}, true));
  keys.push_back(text_key(
      "spawn.host", "FIBER_SPAWN_HOST", [](auto& config) -> auto& { return config.spawn.host; }));
  keys.push_back(text_key(
      "spawn.wdir", "FIBER_SPAWN_WDIR", [](auto& config) -> auto& { return config.spawn.wdir; }));
  keys.push_back(make_key(
      "spawn.env", "FIBER_SPAWN_ENV", [](auto& config) -> auto& { return config.spawn.env; },
      parse_environment_mapping, check_environment_names, true, MergeEnvironment{}));
  keys.push_back(switch_key(
      "spawn.oversubscribe", "FIBER_SPAWN_OVERSUBSCRIBE",
      [](auto& config) -> auto& { return config.spawn.oversubscribe; }));
  keys.push_back(duration_key(
      "liveness_interval", "FIBER_LIVENESS_INTERVAL_MS",
      [](auto& config) -> auto& { return config.liveness_interval; }, milliseconds(1), kOneDay));
  keys.push_back(duration_key(
      "heartbeat_interval", "FIBER_HEARTBEAT_INTERVAL_MS",
      [](auto& config) -> auto& { return config.heartbeat_interval; }, milliseconds(1), kOneDay));
  keys.push_back(duration_key(
      "heartbeat_timeout", "FIBER_HEARTBEAT_TIMEOUT_MS",
      [](auto& config) -> auto& { return config.heartbeat_timeout; }, milliseconds(1), kOneDay));
  keys.push_back(switch_key(
      "pid_checks", "FIBER_PID_CHECKS", [](auto& config) -> auto& { return config.pid_checks; }));
  keys.push_back(duration_key(
      "spawn_timeout", "FIBER_SPAWN_TIMEOUT_S",
      [](auto& config) -> auto& { return config.spawn_timeout; }, seconds(1), kOneDayInSeconds));
  keys.push_back(count_key(
      "max_spawn_batch", "FIBER_MAX_SPAWN_BATCH",
      [](auto& config) -> auto& { return config.max_spawn_batch; }, 1));
  keys.push_back(count_key(
      "min_spawn_batch", "FIBER_MIN_SPAWN_BATCH",
      [](auto& config) -> auto& { return config.min_spawn_batch; }, 1));
  keys.push_back(count_key(
      "reserve_max_idle", "FIBER_RESERVE_MAX_IDLE",
      [](auto& config) -> auto& { return config.reserve_max_idle; }, 0));
  keys.push_back(duration_key(
      "reserve_idle_timeout", "FIBER_RESERVE_IDLE_TIMEOUT_S",
      [](auto& config) -> auto& { return config.reserve_idle_timeout; }, seconds(0), kOneYear));
  keys.push_back(count_key(
      "processes_ahead", "FIBER_PROCESSES_AHEAD",
      [](auto& config) -> auto& { return config.processes_ahead; }, 0));
  keys.push_back(duration_key(
      "pod_start_timeout", "FIBER_POD_START_TIMEOUT_S",
      [](auto& config) -> auto& { return config.pod_start_timeout; }, seconds(1),
      kOneDayInSeconds));
  keys.push_back(duration_key(
      "pod_idle_timeout", "FIBER_POD_IDLE_TIMEOUT_S",
      [](auto& config) -> auto& { return config.pod_idle_timeout; }, seconds(0), kOneYear));
  keys.push_back(make_key(
      "bind", "FIBER_BIND", [](auto& config) -> auto& { return config.bind; }, parse_text,
      [](const std::string& value) {
        if (value != "core" && value != "none")
          throw BadValue("'" + value + "' is not a binding: write core or none");
      }));
  keys.push_back(make_key(
      "log_level", "FIBER_LOG_LEVEL", [](auto& config) -> auto& { return config.log_level; },
      parse_text,
      [](const std::string& value) {
        LogLevel level;
        if (!parse_log_level(value, &level))
          throw BadValue("'" + value +
                         "' is not a log level: write debug, info, warning, error or off");
      }));
  keys.push_back(make_key(
      "log_dir", "FIBER_LOG_DIR", [](auto& config) -> auto& { return config.log_dir; }, parse_text,
      [](const std::string&) {}));
  return keys;
}

const std::vector<Key>& all_keys() {
  static const std::vector<Key> keys = make_keys();
  return keys;
}

const Key* find_key(const std::string& path) {
  for (const Key& key : all_keys()) {
    if (key.path == path) return &key;
  }
  return nullptr;
}

// The names valid right under `prefix` ("" or "spawn."), as full paths, in table order: leaf
// keys and sections ("spawn").
std::vector<std::string> names_under(const std::string& prefix) {
  std::vector<std::string> names;
  for (const Key& key : all_keys()) {
    if (key.path.compare(0, prefix.size(), prefix) != 0) continue;
    const auto dot = key.path.find('.', prefix.size());
    std::string name = dot == std::string::npos ? key.path : key.path.substr(0, dot);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

bool is_section(const std::string& path) {
  const std::string prefix = path + ".";
  return std::any_of(all_keys().begin(), all_keys().end(), [&prefix](const Key& key) {
    return key.path.compare(0, prefix.size(), prefix) == 0;
  });
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The known key or section closest to an unknown `path`, if one is close enough to be a typo
// (or the same name in another section: `env` for `spawn.env`), else one whose name is the
// start of the unknown one's or the other way round (`environment` for `spawn.env`).
std::optional<std::string> closest_name(const std::string& path) {
  std::vector<std::string> candidates;
  for (const Key& key : all_keys()) {
    candidates.push_back(key.path);
    const auto dot = key.path.rfind('.');
    if (dot != std::string::npos) candidates.push_back(key.path.substr(0, dot));
  }
  const auto last_name = [](const std::string& text) {
    const auto dot = text.rfind('.');
    return dot == std::string::npos ? text : text.substr(dot + 1);
  };
  const std::string name = last_name(path);
  std::optional<std::string> best;
  size_t best_distance = std::max<size_t>(2, name.size() / 3) + 1;
  for (const auto& candidate : candidates) {
    const size_t distance =
        std::min(edit_distance(path, candidate), edit_distance(name, last_name(candidate)));
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  if (best) return best;
  constexpr size_t kShortestStem = 3;
  size_t longest_stem = kShortestStem - 1;
  for (const auto& candidate : candidates) {
    const std::string other = last_name(candidate);
    const size_t stem = std::min(name.size(), other.size());
    if (stem > longest_stem && name.compare(0, stem, other, 0, stem) == 0) {
      longest_stem = stem;
      best = candidate;
    }
  }
  return best;
}

// ---- Applying a document -----------------------------------------------------------------------

// Where a node stands in the file, for messages: "configuration file F, line N".
std::string place(const std::string& source, const YAML::Node& node) {
  std::string text = "configuration file " + source;
  const YAML::Mark mark = node.Mark();
  if (mark.line >= 0) text += ", line " + std::to_string(mark.line + 1);
  return text;
}

void apply_mapping(const YAML::Node& mapping, const std::string& prefix, const std::string& source,
                   ResolvedConfig& resolved) {
  std::map<std::string, int> lines_seen;
  for (const auto& entry : mapping) {
    const YAML::Node& name_node = entry.first;
    const YAML::Node& value = entry.second;
    if (!name_node.IsScalar()) {
      throw ConfigError(place(source, name_node) + ": a key must be a name, got " +
                            describe_node(name_node) +
                            "; valid keys: " + joined(names_under(prefix)),
                        source, prefix);
    }
    const std::string path = prefix + name_node.Scalar();
    const int line = name_node.Mark().line + 1;
    if (const auto seen = lines_seen.find(path); seen != lines_seen.end()) {
      throw ConfigError(place(source, name_node) + ": key '" + path +
                            "' appears twice (first on line " + std::to_string(seen->second) + ")",
                        source, path);
    }
    lines_seen.emplace(path, line);

    if (const Key* key = find_key(path)) {
      try {
        key->read(value, resolved.config);
      } catch (const BadValue& problem) {
        throw ConfigError(
            place(source, value.IsDefined() && value.Mark().line >= 0 ? value : name_node) +
                ": key '" + path + "': " + problem.what(),
            source, path);
      }
      resolved.origins[path] = source;
    } else if (is_section(path)) {
      if (value.IsNull()) continue;
      if (!value.IsMap()) {
        throw ConfigError(place(source, name_node) + ": key '" + path +
                              "' must be a mapping of its keys (" +
                              joined(names_under(path + ".")) + "), got " + describe_node(value),
                          source, path);
      }
      apply_mapping(value, path + ".", source, resolved);
    } else {
      std::string message = place(source, name_node) + ": unknown key '" + path + "'";
      if (const auto guess = closest_name(path)) message += " (did you mean '" + *guess + "'?)";
      message += "; valid keys: " + joined(names_under(prefix));
      throw ConfigError(message, source, path);
    }
  }
}

}  // namespace

EnvironmentLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

std::string ResolvedConfig::origin(const std::string& key) const {
  const auto found = origins.find(key);
  return found == origins.end() ? "default" : found->second;
}

std::string ResolvedConfig::describe(const std::string& key) const {
  const auto found = origins.find(key);
  return key + (found == origins.end() ? " (default)" : " (from " + found->second + ")");
}

std::optional<fs::path> find_config_file(const EnvironmentLookup& environment,
                                         const fs::path& working_directory) {
  std::error_code error;
  if (const auto named = environment("FIBER_CONFIG"); named && !named->empty()) {
    fs::path path(*named);
    if (path.is_relative()) path = working_directory / path;
    path = path.lexically_normal();
    if (!fs::exists(path, error)) {
      throw ConfigError("FIBER_CONFIG=" + *named + " names a configuration file that does not " +
                            "exist (" + path.string() + ")",
                        "FIBER_CONFIG", "");
    }
    return path;
  }
  const fs::path local = (working_directory / "fiber.yaml").lexically_normal();
  if (fs::exists(local, error)) return local;
  return std::nullopt;
}

void apply_config_text(const std::string& text, const std::string& source,
                       ResolvedConfig& resolved) {
  YAML::Node document;
  try {
    document = YAML::Load(text);
  } catch (const YAML::Exception& error) {
    throw ConfigError("configuration file " + source + " is not valid YAML: " + error.what(),
                      source, "");
  }
  if (!document.IsDefined() || document.IsNull()) return;
  if (!document.IsMap()) {
    throw ConfigError("configuration file " + source +
                          ": the document must be a mapping of keys to values, got " +
                          describe_node(document) + "; valid keys: " + joined(names_under("")),
                      source, "");
  }
  apply_mapping(document, "", source, resolved);
}

void apply_config_file(const fs::path& path, ResolvedConfig& resolved) {
  const std::string source = path.string();
  std::error_code error;
  if (fs::is_directory(path, error)) {
    throw ConfigError("configuration file " + source + " is a directory", source, "");
  }
  std::ifstream file(path);
  std::ostringstream text;
  if (file) text << file.rdbuf();
  if (!file || file.bad()) {
    throw ConfigError("configuration file " + source + " cannot be read", source, "");
  }
  apply_config_text(text.str(), source, resolved);
  resolved.file = fs::absolute(path, error).string();
  if (error) resolved.file = source;
}

void apply_config_environment(const EnvironmentLookup& environment, ResolvedConfig& resolved) {
  for (const Key& key : all_keys()) {
    const auto text = environment(key.variable);
    if (!text || text->empty()) continue;
    const std::string where =
        "environment variable " + key.variable + "='" + *text + "' (key '" + key.path + "')";
    try {
      key.read(key.structured ? YAML::Load(*text) : YAML::Node(*text), resolved.config);
    } catch (const YAML::Exception& error) {
      throw ConfigError(where + ": not a YAML " +
                            std::string(key.path == "spawn.env" ? "mapping" : "list") + ": " +
                            error.what(),
                        key.variable, key.path);
    } catch (const BadValue& problem) {
      throw ConfigError(where + ": " + problem.what(), key.variable, key.path);
    }
    resolved.origins[key.path] = key.variable;
  }
}

void apply_config_code(const Config& code, ResolvedConfig& resolved) {
  for (const Key& key : all_keys()) {
    try {
      if (key.take_from_code(code, resolved.config)) resolved.origins[key.path] = kCodeSource;
    } catch (const BadValue& problem) {
      throw ConfigError(std::string(kCodeSource) + " field '" + key.path + "': " + problem.what(),
                        kCodeSource, key.path);
    }
  }
}

ResolvedConfig resolve_config(const Config& code, const EnvironmentLookup& environment,
                              const fs::path& working_directory) {
  ResolvedConfig resolved;
  if (const auto file = find_config_file(environment, working_directory))
    apply_config_file(*file, resolved);
  apply_config_environment(environment, resolved);
  apply_config_code(code, resolved);
  return resolved;
}

std::vector<std::string> config_keys() {
  std::vector<std::string> paths;
  for (const Key& key : all_keys()) paths.push_back(key.path);
  return paths;
}

std::string config_environment_variable(const std::string& key) {
  if (const Key* found = find_key(key)) return found->variable;
  throw std::out_of_range("no configuration key '" + key + "'");
}

std::string config_value_text(const Config& config, const std::string& key) {
  const Key* found = find_key(key);
  if (!found) throw std::out_of_range("no configuration key " + key);
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << found->node(config);
  return out.c_str();
}

}  // namespace fiber::internal
