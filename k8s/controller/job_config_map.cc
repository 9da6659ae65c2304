#include "k8s/controller/job_config_map.h"

#include <string>

#include "k8s/controller/object_names.h"
#include "k8s/controller/pod_builder.h"

namespace fiber::k8s::controller {

using nlohmann::json;

json build_job_config_map(const JobSpec& job, const std::string& name, json data) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", name},
            {"namespace", job.ns},
            {"labels", {{std::string(kJobNameLabel), job.name}}},
            {"ownerReferences", json::array({owner_reference(job)})}}},
          {"data", std::move(data)}};
}

json build_config_map(const JobSpec& job) {
  return build_job_config_map(job, config_map_name(job.name),
                              {{kConfigFileKey, job.config.value_or("")}});
}

bool config_map_is_current(const json& config_map, const JobSpec& job) {
  if (!job.config) return true;
  const json::json_pointer pointer(std::string("/data/") + kConfigFileKey);
  return config_map.contains(pointer) && config_map.at(pointer).is_string() &&
         config_map.at(pointer).get<std::string>() == *job.config;
}

void mount_config_map(json& pod, const JobSpec& job) {
  mount_in_first_container(
      pod, {{"name", kConfigVolumeName}, {"configMap", {{"name", config_map_name(job.name)}}}},
      kConfigMountPath, "FIBER_CONFIG", kConfigFilePath);
}

}  // namespace fiber::k8s::controller
