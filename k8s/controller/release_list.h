// The program's side of its job's size, in ConfigMap NAME-release: the worker pods it asks for
// (key workersRequested, a count) and those it gives back (key workersToDelete, one pod name a
// line). The launcher's Role may get and update that one ConfigMap and only read its job, so a
// program can neither rewrite its job's spec (the worker template, maxReplicas, suspend) nor
// release another job's pods, and spec.workers.replicas stays with people and autoscalers: the
// controller keeps max(replicas, workersRequested) within [minReplicas, maxReplicas], and takes
// the union of spec.workers.workersToDelete and the program's list. The ConfigMap's keys and how
// its values read: k8s/client/release_request.h, shared with the launcher.
#pragma once

#include <nlohmann/json.hpp>

#include "k8s/client/release_request.h"
#include "k8s/controller/job_spec.h"

namespace fiber::k8s::controller {

/// The launcher's environment variable naming the ConfigMap.
inline constexpr const char* kReleaseListVariable = "FIBER_K8S_RELEASE_CONFIG_MAP";

/// ConfigMap NAME-release, empty, labelled with the job's name and owned by the job.
nlohmann::json build_release_config_map(const JobSpec& job);

}  // namespace fiber::k8s::controller
