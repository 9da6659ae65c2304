#include "k8s/controller/object_names.h"

#include <charconv>

namespace fiber::k8s::controller {

std::string service_name(std::string_view job) { return std::string(job); }

std::string name_service_pod_name(std::string_view job) {
  return std::string(job) + "-nameservice";
}

std::string launcher_pod_name(std::string_view job) { return std::string(job) + "-launcher"; }

std::string launcher_account_name(std::string_view job) { return std::string(job) + "-launcher"; }

std::string config_map_name(std::string_view job) { return std::string(job) + "-config"; }

std::string release_config_map_name(std::string_view job) { return std::string(job) + "-release"; }

std::string join_token_secret_name(std::string_view job) {
  return std::string(job) + "-join-token";
}

std::string network_policy_name(std::string_view job) { return std::string(job); }
std::string egress_network_policy_name(std::string_view job) {
  return std::string(job) + ".egress";
}

std::string worker_pod_name(std::string_view job, int index) {
  return std::string(job) + "-worker-" + std::to_string(index);
}

std::string worker_selector(std::string_view job) {
  return job_selector(job) + "," + std::string(kRoleLabel) + "=" + std::string(kWorkerRole);
}

std::string job_selector(std::string_view job) {
  return std::string(kJobNameLabel) + "=" + std::string(job);
}

std::optional<int> parse_worker_index(std::string_view text) {
  if (text.empty() || (text.size() > 1 && text.front() == '0')) return std::nullopt;
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || ptr != end || value < 0) return std::nullopt;
  return value;
}

std::string object_key(std::string_view ns, std::string_view name) {
  return std::string(ns) + "/" + std::string(name);
}

}  // namespace fiber::k8s::controller
