#include "k8s/controller/launcher_access.h"

#include <string>

#include "k8s/controller/object_names.h"
#include "k8s/controller/pod_builder.h"

namespace fiber::k8s::controller {
namespace {

using nlohmann::json;

constexpr const char* kRbacGroup = "rbac.authorization.k8s.io";

json launcher_access_metadata(const JobSpec& job) {
  return {{"name", launcher_account_name(job.name)},
          {"namespace", job.ns},
          {"labels",
           {{std::string(kJobNameLabel), job.name},
            {std::string(kRoleLabel), std::string(kLauncherRole)}}},
          {"ownerReferences", json::array({owner_reference(job)})}};
}

}  // namespace

json build_launcher_service_account(const JobSpec& job) {
  return {{"apiVersion", "v1"},
          {"kind", "ServiceAccount"},
          {"metadata", launcher_access_metadata(job)}};
}

json build_launcher_role(const JobSpec& job) {
  // Exactly what the runtime does: read its job, and ask for and release pods in its release
  // ConfigMap. Nothing else (no write of the job itself: its worker template, maxReplicas,
  // suspend, nor the replicas that people and autoscalers set through /scale), and nothing of
  // any other job.
  const json names = json::array({job.name});
  return {{"apiVersion", std::string(kRbacGroup) + "/v1"},
          {"kind", "Role"},
          {"metadata", launcher_access_metadata(job)},
          {"rules",
           {{{"apiGroups", {"fibermpi.io"}},
             {"resources", {"fiberjobs"}},
             {"resourceNames", names},
             {"verbs", {"get"}}},
            {{"apiGroups", {""}},
             {"resources", {"configmaps"}},
             {"resourceNames", json::array({release_config_map_name(job.name)})},
             {"verbs", {"get", "update"}}}}}};
}

json build_launcher_role_binding(const JobSpec& job) {
  const std::string name = launcher_account_name(job.name);
  return {{"apiVersion", std::string(kRbacGroup) + "/v1"},
          {"kind", "RoleBinding"},
          {"metadata", launcher_access_metadata(job)},
          {"roleRef", {{"apiGroup", kRbacGroup}, {"kind", "Role"}, {"name", name}}},
          {"subjects", {{{"kind", "ServiceAccount"}, {"name", name}, {"namespace", job.ns}}}}};
}

}  // namespace fiber::k8s::controller
