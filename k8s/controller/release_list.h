// The program's side of its job's size, in ConfigMap NAME-release: the worker pods it asks for
// (key workersRequested, a count) and those it gives back (key workersToDelete, one pod name a
// line). The launcher's Role may get and update that one ConfigMap and only read its job, so a
// program can neither rewrite its job's spec (the worker template, maxReplicas, suspend) nor
// release another job's pods, and spec.workers.replicas stays with people and autoscalers: the
// controller keeps max(replicas, workersRequested) within [minReplicas, maxReplicas], and takes
// the union of spec.workers.workersToDelete and the program's list.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "k8s/controller/job_spec.h"

namespace fiber::k8s::controller {

/// The ConfigMap's keys.
inline constexpr const char* kReleaseListKey = "workersToDelete";
inline constexpr const char* kRequestedWorkersKey = "workersRequested";
/// The launcher's environment variable naming the ConfigMap.
inline constexpr const char* kReleaseListVariable = "FIBER_K8S_RELEASE_CONFIG_MAP";

/// ConfigMap NAME-release, empty, labelled with the job's name and owned by the job.
nlohmann::json build_release_config_map(const JobSpec& job);

/// The pod names the ConfigMap lists. Lines that are no pod name (not a DNS-1123 subdomain of at
/// most 253 characters) are left out and described in `refused`, for a warning: the list is the
/// launcher's to write, and a program's bad line must not stop the job.
std::set<std::string> parse_release_list(const nlohmann::json& config_map,
                                         std::vector<std::string>& refused);

/// The worker pods the program asks for (0 when the key is absent or empty). A value that is no
/// count (a decimal from 0 to 100000) counts as 0 and is described in `refused`, as above.
std::int32_t parse_requested_workers(const nlohmann::json& config_map,
                                     std::vector<std::string>& refused);

}  // namespace fiber::k8s::controller
