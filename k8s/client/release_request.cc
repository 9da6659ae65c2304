#include "k8s/client/release_request.h"

#include <algorithm>
#include <sstream>

namespace fiber::k8s {
namespace {

using nlohmann::json;

// A DNS-1123 subdomain, what the API server allows as a pod's name.
bool is_pod_name(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '.'; });
}

// The string value of data[key]; null when absent (the API server keeps data values strings).
const std::string* data_value(const json& config_map, const char* key) {
  const json::json_pointer pointer(std::string("/data/") + key);
  if (!config_map.is_object() || !config_map.contains(pointer)) return nullptr;
  const json& value = config_map.at(pointer);
  return value.is_string() ? &value.get_ref<const std::string&>() : nullptr;
}

std::string trimmed(const std::string& text, const char* blanks) {
  const auto first = text.find_first_not_of(blanks);
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(blanks) - first + 1);
}

}  // namespace

std::set<std::string> parse_release_list(const json& config_map,
                                         std::vector<std::string>& refused) {
  std::set<std::string> names;
  const std::string* value = data_value(config_map, kReleaseListKey);
  if (value == nullptr) return names;
  std::istringstream lines(*value);
  for (std::string line; std::getline(lines, line);) {
    line = trimmed(line, " \t\r");
    if (line.empty()) continue;
    if (is_pod_name(line)) {
      names.insert(line);
    } else {
      refused.push_back("'" + line.substr(0, 80) + "' is not a pod name");
    }
  }
  return names;
}

std::int32_t parse_requested_workers(const json& config_map, std::vector<std::string>& refused) {
  const std::string* value = data_value(config_map, kRequestedWorkersKey);
  if (value == nullptr) return 0;
  const std::string text = trimmed(*value, " \t\r\n");
  if (text.empty()) return 0;
  // More digits than the bound has are refused before any conversion.
  if (text.size() <= 6 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const std::int32_t count = std::stoi(text);
    if (count <= kMostRequestedWorkers) return count;
  }
  refused.push_back(std::string(kRequestedWorkersKey) + " '" + text.substr(0, 80) +
                    "' is not a count of worker pods (0 to " +
                    std::to_string(kMostRequestedWorkers) + ")");
  return 0;
}

std::string release_list_text(const std::set<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += name + "\n";
  return text;
}

}  // namespace fiber::k8s
