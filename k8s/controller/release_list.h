// The program's release list: the worker pods the launcher gives back, in ConfigMap
// NAME-release (key workersToDelete, one pod name a line). The launcher's Role may get and
// update that one ConfigMap and nothing else of the job but its scale subresource, so a program
// can neither rewrite its job's spec (the worker template, maxReplicas, suspend) nor release
// another job's pods. spec.workers.workersToDelete stays for people; the controller takes the
// union of both.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "k8s/controller/job_spec.h"

namespace fiber::k8s::controller {

/// The ConfigMap's key.
inline constexpr const char* kReleaseListKey = "workersToDelete";
/// The launcher's environment variable naming the ConfigMap.
inline constexpr const char* kReleaseListVariable = "FIBER_K8S_RELEASE_CONFIG_MAP";

/// ConfigMap NAME-release, empty, labelled with the job's name and owned by the job.
nlohmann::json build_release_config_map(const JobSpec& job);

/// The pod names the ConfigMap lists. Lines that are no pod name (not a DNS-1123 subdomain of at
/// most 253 characters) are left out and described in `refused`, for a warning: the list is the
/// launcher's to write, and a program's bad line must not stop the job.
std::set<std::string> parse_release_list(const nlohmann::json& config_map,
                                         std::vector<std::string>& refused);

}  // namespace fiber::k8s::controller
