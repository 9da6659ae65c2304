// The objects the controller creates for a FiberJob: its headless Service and its pods, each
// labelled, owned by the job, and (launcher and workers) given the FIBER_* environment.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "k8s/controller/job_spec.h"

namespace fiber::k8s::controller {

/// Image of the default name-service pod when the controller is given none.
inline constexpr const char* kDefaultNameServiceImage = "fibermpi/runtime:0.1.0";

/// The ownerReference every object of `job` carries (controller and blockOwnerDeletion true).
nlohmann::json owner_reference(const JobSpec& job);

/// Adds `volume` to `pod` and mounts it read-only at `path` in the pod's first container, with
/// environment variable `variable`=`value` unless the container sets that variable itself. A
/// pod without containers is left as it is.
void mount_in_first_container(nlohmann::json& pod, nlohmann::json volume, const std::string& path,
                              const std::string& variable, const std::string& value);

/// The headless Service NAME selecting every pod of the job.
nlohmann::json build_service(const JobSpec& job);

/// The pod NAME-nameservice: `stdbuf -oL ompi-server --no-daemonize -r -` in `image`, or the job's
/// spec.nameService.template when it has one.
nlohmann::json build_name_service_pod(const JobSpec& job, const std::string& image);

/// The pod NAME-launcher from spec.launcher.template, told the name service's `uri`; it runs as
/// ServiceAccount NAME-launcher unless the template names one, its first container's
/// terminationMessagePolicy is FallbackToLogsOnError unless the template sets one, and with
/// spec.config it mounts the job's ConfigMap (job_config_map.h); it mounts the job's join token
/// (job_isolation.h).
nlohmann::json build_launcher_pod(const JobSpec& job, const std::string& uri);

/// The pod NAME-worker-INDEX from spec.workers.template, told the name service's `uri`. When its
/// first container has no command, it runs the launcher's first container's command (and args,
/// unless it has its own); with spec.config it mounts the job's ConfigMap; it mounts the job's
/// join token.
nlohmann::json build_worker_pod(const JobSpec& job, int index, const std::string& uri);

}  // namespace fiber::k8s::controller
