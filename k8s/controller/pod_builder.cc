#include "k8s/controller/pod_builder.h"

#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "k8s/controller/job_config_map.h"
#include "k8s/controller/job_isolation.h"
#include "k8s/controller/object_names.h"
#include "k8s/controller/release_list.h"

namespace fiber::k8s::controller {
namespace {

using nlohmann::json;

// Longest DNS label: a pod hostname must fit in one.
constexpr std::size_t kMaxHostnameLength = 63;

json object_metadata(const JobSpec& job, const std::string& name, std::string_view role,
                     const json& template_metadata) {
  json metadata = json::object();
  json labels = json::object();
  if (template_metadata.is_object()) {
    if (template_metadata.contains("labels") && template_metadata["labels"].is_object()) {
      labels = template_metadata["labels"];
    }
    if (template_metadata.contains("annotations") && template_metadata["annotations"].is_object()) {
      metadata["annotations"] = template_metadata["annotations"];
    }
  }
  labels[std::string(kJobNameLabel)] = job.name;
  if (!role.empty()) labels[std::string(kRoleLabel)] = std::string(role);
  metadata["name"] = name;
  metadata["namespace"] = job.ns;
  metadata["labels"] = std::move(labels);
  metadata["ownerReferences"] = json::array({owner_reference(job)});
  return metadata;
}

json value_env(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

json field_env(const std::string& name, const std::string& field_path) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", field_path}}}}}};
}

// Puts `ours` before the container's own variables, leaving out those it defines itself: its own
// win, and ours come first so that its values can refer to them as $(NAME).
void add_environment(json& container, const std::vector<json>& ours) {
  json own =
      container.contains("env") && container["env"].is_array() ? container["env"] : json::array();
  std::set<std::string> own_names;
  for (const json& variable : own) own_names.insert(variable.value("name", ""));
  json merged = json::array();
  for (const json& variable : ours) {
    if (!own_names.contains(variable["name"].get<std::string>())) merged.push_back(variable);
  }
  for (json& variable : own) merged.push_back(std::move(variable));
  container["env"] = std::move(merged);
}

// Whether `tolerations` already tolerate the NoExecute taint `key` (by its key, or every key).
bool tolerates_no_execute(const json& tolerations, std::string_view key) {
  for (const json& toleration : tolerations) {
    if (!toleration.is_object()) continue;
    const std::string effect = toleration.value("effect", "");
    if (!effect.empty() && effect != "NoExecute") continue;
    const std::string own_key = toleration.value("key", "");
    if (own_key == key || (own_key.empty() && toleration.value("operator", "") == "Exists"))
      return true;
  }
  return false;
}

// A pod on a node that stops answering stays bound to it, Running, for as long as it tolerates
// the node controller's NoExecute taints: 300 s by the cluster's default (DefaultTolerationSeconds
// admission). A lost worker is only replaced, and a lost launcher only ends the job, once the pod
// is evicted, so the job's pods tolerate those taints for runPolicy.nodeLossTolerationSeconds.
void add_node_loss_tolerations(json& spec, const JobSpec& job) {
  if (!spec.contains("tolerations") || !spec["tolerations"].is_array())
    spec["tolerations"] = json::array();
  json& tolerations = spec["tolerations"];
  for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    if (tolerates_no_execute(tolerations, key)) continue;  // the template's own wins
    tolerations.push_back({{"key", key},
                           {"operator", "Exists"},
                           {"effect", "NoExecute"},
                           {"tolerationSeconds", job.node_loss_toleration_seconds}});
  }
}

// A pod from `pod_template`: our metadata, restartPolicy Never, the Service's DNS subdomain,
// short tolerations of a lost node.
json pod_from_template(const JobSpec& job, const std::string& name, std::string_view role,
                       const json& pod_template) {
  const json template_metadata = pod_template.value("metadata", json::object());
  json spec = pod_template.value("spec", json::object());
  if (!spec.is_object()) spec = json::object();
  spec["restartPolicy"] = "Never";
  if (!spec.contains("hostname") && name.size() <= kMaxHostnameLength) spec["hostname"] = name;
  if (!spec.contains("subdomain")) spec["subdomain"] = service_name(job.name);
  add_node_loss_tolerations(spec, job);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", object_metadata(job, name, role, template_metadata)},
          {"spec", std::move(spec)}};
}

void add_environment_to_containers(json& pod, const std::vector<json>& ours) {
  for (const char* list : {"initContainers", "containers"}) {
    if (!pod["spec"].contains(list) || !pod["spec"][list].is_array()) continue;
    for (json& container : pod["spec"][list]) add_environment(container, ours);
  }
}

// The first container of `pod`, or null when it has none.
json* first_container(json& pod) {
  json& containers = pod["spec"]["containers"];
  if (!containers.is_array() || containers.empty() || !containers[0].is_object()) return nullptr;
  return &containers[0];
}

const json* first_template_container(const json& pod_template) {
  const json::json_pointer pointer("/spec/containers/0");
  if (!pod_template.contains(pointer) || !pod_template.at(pointer).is_object()) return nullptr;
  return &pod_template.at(pointer);
}

// A worker whose first container names no command runs the program the launcher runs: the
// program's own binary serves as its worker. A launcher that names its program in args alone
// keeps its image's ENTRYPOINT (tini in the runtime image): a worker naming neither command nor
// args then takes those args, under its own image's ENTRYPOINT.
void take_launcher_command(json& pod, const JobSpec& job) {
  json* worker = first_container(pod);
  const json* launcher = first_template_container(job.launcher_template);
  if (worker == nullptr || launcher == nullptr || worker->contains("command")) return;
  if (launcher->contains("command"))
    (*worker)["command"] = (*launcher)["command"];
  else if (worker->contains("args"))
    return;
  if (!worker->contains("args") && launcher->contains("args")) {
    (*worker)["args"] = (*launcher)["args"];
  }
}

// A quantity as the API server gives it back: a string ("500m", "4Gi"); a bare number in a
// template not yet through an API server is written out as one.
std::optional<std::string> quantity_text(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number()) return value.dump();
  return std::nullopt;
}

// What each worker pod gets, for a pool's cpus/memory/gpus_per_worker to be checked against in
// the program: the worker template's first container's limits, else its requests (what the pod
// is guaranteed). GPUs are an extended resource ("nvidia.com/gpu"), whose request equals its
// limit. Nothing for what the template leaves open.
std::vector<json> worker_resource_environment(const JobSpec& job) {
  const json* container = first_template_container(job.worker_template);
  if (container == nullptr || !container->contains("resources") ||
      !(*container)["resources"].is_object())
    return {};
  const json& resources = (*container)["resources"];
  const auto amount = [&](const auto& matches) -> std::optional<std::string> {
    for (const char* section : {"limits", "requests"}) {
      if (!resources.contains(section) || !resources[section].is_object()) continue;
      for (const auto& [name, value] : resources[section].items())
        if (matches(name)) return quantity_text(value);
    }
    return std::nullopt;
  };
  std::vector<json> environment;
  if (auto cpu = amount([](const std::string& name) { return name == "cpu"; }))
    environment.push_back(value_env("FIBER_K8S_WORKER_CPU", *cpu));
  if (auto memory = amount([](const std::string& name) { return name == "memory"; }))
    environment.push_back(value_env("FIBER_K8S_WORKER_MEMORY", *memory));
  if (auto gpus = amount([](const std::string& name) { return name.ends_with("/gpu"); }))
    environment.push_back(value_env("FIBER_K8S_WORKER_GPUS", *gpus));
  return environment;
}

std::vector<json> fiber_environment(const JobSpec& job, std::string_view role,
                                    const std::string& uri) {
  std::vector<json> environment = {
      value_env("FIBER_K8S_JOB", job.name),
      value_env("FIBER_K8S_NAMESPACE", job.ns),
      value_env("FIBER_K8S_ROLE", std::string(role)),
      value_env("FIBER_NAME_SERVICE_URI", uri),
      value_env("FIBER_SLOTS_PER_WORKER", std::to_string(job.slots_per_worker)),
      field_env("FIBER_K8S_POD_NAME", "metadata.name"),
      field_env("FIBER_K8S_POD_UID", "metadata.uid"),
      field_env("FIBER_K8S_POD_IP", "status.podIP")};
  for (json& variable : worker_resource_environment(job))
    environment.push_back(std::move(variable));
  return environment;
}

}  // namespace

json owner_reference(const JobSpec& job) {
  return {{"apiVersion", std::string(kFiberJobApiVersion)},
          {"kind", std::string(kFiberJobKind)},
          {"name", job.name},
          {"uid", job.uid},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

void mount_in_first_container(json& pod, json volume, const std::string& path,
                              const std::string& variable, const std::string& value) {
  json& spec = pod["spec"];
  if (!spec.contains("containers") || !spec["containers"].is_array() ||
      spec["containers"].empty() || !spec["containers"][0].is_object()) {
    return;
  }
  if (!spec.contains("volumes") || !spec["volumes"].is_array()) spec["volumes"] = json::array();
  const std::string name = volume["name"];
  spec["volumes"].push_back(std::move(volume));
  json& container = spec["containers"][0];
  if (!container.contains("volumeMounts") || !container["volumeMounts"].is_array()) {
    container["volumeMounts"] = json::array();
  }
  container["volumeMounts"].push_back({{"name", name}, {"mountPath", path}, {"readOnly", true}});
  if (!container.contains("env") || !container["env"].is_array()) container["env"] = json::array();
  for (const json& each : container["env"]) {
    if (each.value("name", "") == variable) return;  // the template's own wins
  }
  container["env"].push_back({{"name", variable}, {"value", value}});
}

json build_service(const JobSpec& job) {
  // publishNotReadyAddresses: the pods find each other by DNS before they report ready.
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", object_metadata(job, service_name(job.name), {}, json::object())},
          {"spec",
           {{"clusterIP", "None"},
            {"publishNotReadyAddresses", true},
            {"selector", {{std::string(kJobNameLabel), job.name}}}}}};
}

// The runtime image's user (k8s/docker/runtime.Dockerfile: useradd --uid 1000 fiber).
constexpr int kRuntimeImageUser = 1000;

json build_name_service_pod(const JobSpec& job, const std::string& image) {
  const std::string name = name_service_pod_name(job.name);
  if (job.name_service_template.is_object()) {
    return pod_from_template(job, name, kNameServiceRole, job.name_service_template);
  }
  // Its stdout is a pipe or a file, not a terminal: without line buffering (stdbuf) the URI would
  // stay in its stdio buffer until it exits, and never reach the log the controller reads.
  // It passes the Pod Security Standard "restricted" (non-root as the runtime image's user,
  // no privilege escalation, no capabilities, the runtime's default seccomp profile), carries
  // requests and limits (a namespace with a ResourceQuota refuses pods without them), and gets
  // no ServiceAccount token: it never talks to the API server. The root opt-in stays for nodes
  // that run it as root whatever runAsUser says (the development cluster's host-filesystem pods);
  // ompi-server ignores it otherwise.
  const json container = {
      {"name", "name-service"},
      {"image", image},
      {"command", {"stdbuf", "-oL", "ompi-server", "--no-daemonize", "-r", "-"}},
      {"env",
       {value_env("OMPI_ALLOW_RUN_AS_ROOT", "1"),
        value_env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")}},
      {"resources",
       {{"requests", {{"cpu", "50m"}, {"memory", "64Mi"}}},
        {"limits", {{"cpu", "500m"}, {"memory", "256Mi"}}}}},
      {"securityContext",
       {{"allowPrivilegeEscalation", false}, {"capabilities", {{"drop", {"ALL"}}}}}}};
  const json pod_template = {{"spec",
                              {{"containers", json::array({container})},
                               {"automountServiceAccountToken", false},
                               {"securityContext",
                                {{"runAsNonRoot", true},
                                 {"runAsUser", kRuntimeImageUser},
                                 {"runAsGroup", kRuntimeImageUser},
                                 {"seccompProfile", {{"type", "RuntimeDefault"}}}}}}}};
  return pod_from_template(job, name, kNameServiceRole, pod_template);
}

json build_launcher_pod(const JobSpec& job, const std::string& uri) {
  json pod =
      pod_from_template(job, launcher_pod_name(job.name), kLauncherRole, job.launcher_template);
  std::vector<json> environment = fiber_environment(job, kLauncherRole, uri);
  environment.push_back(value_env(kReleaseListVariable, release_config_map_name(job.name)));
  add_environment_to_containers(pod, environment);
  json& spec = pod["spec"];
  // The program talks to the API server as its own account, which may touch only this job.
  if (!spec.contains("serviceAccountName") && !spec.contains("serviceAccount")) {
    spec["serviceAccountName"] = launcher_account_name(job.name);
  }
  // Why the program failed reaches the job's Failed condition: the container's termination
  // message, or the end of its log when it wrote none.
  if (json* container = first_container(pod);
      container != nullptr && !container->contains("terminationMessagePolicy")) {
    (*container)["terminationMessagePolicy"] = "FallbackToLogsOnError";
  }
  if (job.config) mount_config_map(pod, job);
  mount_join_token(pod, job);
  return pod;
}

json build_worker_pod(const JobSpec& job, int index, const std::string& uri) {
  json pod =
      pod_from_template(job, worker_pod_name(job.name, index), kWorkerRole, job.worker_template);
  pod["metadata"]["labels"][std::string(kWorkerIndexLabel)] = std::to_string(index);
  std::vector<json> environment = fiber_environment(job, kWorkerRole, uri);
  environment.insert(environment.begin() + 3,
                     value_env("FIBER_K8S_WORKER_INDEX", std::to_string(index)));
  add_environment_to_containers(pod, environment);
  take_launcher_command(pod, job);
  if (job.config) mount_config_map(pod, job);
  mount_join_token(pod, job);
  // Workers never talk to the API server (the launcher asks for and releases pods): no token in
  // them unless their template asks for one.
  if (!pod["spec"].contains("automountServiceAccountToken")) {
    pod["spec"]["automountServiceAccountToken"] = false;
  }
  return pod;
}

}  // namespace fiber::k8s::controller
