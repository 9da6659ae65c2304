#include "k8s/controller/release_list.h"

#include <algorithm>
#include <sstream>

#include "k8s/controller/job_config_map.h"
#include "k8s/controller/object_names.h"

namespace fiber::k8s::controller {
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

}  // namespace

json build_release_config_map(const JobSpec& job) {
  return build_job_config_map(job, release_config_map_name(job.name), {{kReleaseListKey, ""}});
}

std::set<std::string> parse_release_list(const json& config_map,
                                         std::vector<std::string>& refused) {
  std::set<std::string> names;
  const json::json_pointer pointer(std::string("/data/") + kReleaseListKey);
  if (!config_map.is_object() || !config_map.contains(pointer)) return names;
  const json& value = config_map.at(pointer);
  if (!value.is_string()) return names;  // the API server keeps data values strings
  std::istringstream lines(value.get<std::string>());
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    if (is_pod_name(line)) {
      names.insert(line);
    } else {
      refused.push_back("'" + line.substr(0, 80) + "' is not a pod name");
    }
  }
  return names;
}

std::int32_t parse_requested_workers(const json& config_map, std::vector<std::string>& refused) {
  const json::json_pointer pointer(std::string("/data/") + kRequestedWorkersKey);
  if (!config_map.is_object() || !config_map.contains(pointer)) return 0;
  const json& value = config_map.at(pointer);
  if (!value.is_string()) return 0;
  std::string text = value.get<std::string>();
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return 0;
  text = text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
  // The CRD's bound on replicas; more digits than it has are refused before any conversion.
  constexpr std::int32_t kMostWorkers = 100000;
  if (text.size() <= 6 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const std::int32_t count = std::stoi(text);
    if (count <= kMostWorkers) return count;
  }
  refused.push_back(std::string(kRequestedWorkersKey) + " '" + text.substr(0, 80) +
                    "' is not a count of worker pods (0 to 100000)");
  return 0;
}

}  // namespace fiber::k8s::controller
