// The job's configuration file: spec.config kept in ConfigMap NAME-config and mounted read-only
// into the first container of the launcher and of every worker.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "k8s/controller/job_spec.h"

namespace fiber::k8s::controller {

/// The ConfigMap's key, and so the file's name in the mounted folder.
inline constexpr const char* kConfigFileKey = "fiber.yaml";
/// Where the ConfigMap is mounted.
inline constexpr const char* kConfigMountPath = "/etc/fibermpi";
/// The file the runtime reads: FIBER_CONFIG's value.
inline constexpr const char* kConfigFilePath = "/etc/fibermpi/fiber.yaml";
/// Name of the pod volume holding the ConfigMap.
inline constexpr const char* kConfigVolumeName = "fibermpi-config";

/// A ConfigMap `name` of the job's (labelled with its name, controlled by it) holding `data`.
nlohmann::json build_job_config_map(const JobSpec& job, const std::string& name,
                                    nlohmann::json data);

/// ConfigMap NAME-config with `fiber.yaml` = *job.config, owned by the job. job.config must be set.
nlohmann::json build_config_map(const JobSpec& job);

/// True when `config_map` (one the job controls) holds exactly *job.config under fiber.yaml.
bool config_map_is_current(const nlohmann::json& config_map, const JobSpec& job);

/// Adds the ConfigMap's volume to `pod` and mounts it read-only at /etc/fibermpi in its first
/// container, with FIBER_CONFIG=/etc/fibermpi/fiber.yaml (unless the container sets FIBER_CONFIG).
void mount_config_map(nlohmann::json& pod, const JobSpec& job);

}  // namespace fiber::k8s::controller
