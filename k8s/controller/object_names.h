// Names and labels of the objects the controller creates for a FiberJob (the contract of
// k8s/README.md, shared with the nodes and the tests).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fiber::k8s::controller {

/// Label naming the FiberJob an object belongs to.
inline constexpr std::string_view kJobNameLabel = "fibermpi.io/job-name";
/// Label naming the part an object plays: name-service, launcher or worker.
inline constexpr std::string_view kRoleLabel = "fibermpi.io/role";
/// Label with a worker pod's index.
inline constexpr std::string_view kWorkerIndexLabel = "fibermpi.io/worker-index";

inline constexpr std::string_view kNameServiceRole = "name-service";
inline constexpr std::string_view kLauncherRole = "launcher";
inline constexpr std::string_view kWorkerRole = "worker";

/// apiVersion and kind of the FiberJob, for ownerReferences and Events.
inline constexpr std::string_view kFiberJobApiVersion = "fibermpi.io/v1alpha1";
inline constexpr std::string_view kFiberJobKind = "FiberJob";

/// The headless Service: the job's own name.
std::string service_name(std::string_view job);
/// "JOB-nameservice".
std::string name_service_pod_name(std::string_view job);
/// "JOB-launcher".
std::string launcher_pod_name(std::string_view job);
/// "JOB-launcher": also the name of the launcher's ServiceAccount, Role and RoleBinding.
std::string launcher_account_name(std::string_view job);
/// "JOB-config": the ConfigMap holding spec.config as fiber.yaml.
std::string config_map_name(std::string_view job);
/// "JOB-release": the ConfigMap in which the launcher lists the worker pods it releases.
std::string release_config_map_name(std::string_view job);
/// "JOB-join-token": the Secret holding the token the job's pods prove to each other.
std::string join_token_secret_name(std::string_view job);
/// The job's NetworkPolicy: the job's own name.
std::string network_policy_name(std::string_view job);
/// "JOB.egress": the job's egress NetworkPolicy, made only where the namespace isolates egress
/// (a dot, which no job's name holds, so that it never meets another job's policy NAME).
std::string egress_network_policy_name(std::string_view job);
/// "JOB-worker-INDEX".
std::string worker_pod_name(std::string_view job, int index);
/// Label selector of the job's worker pods, written to status.workers.selector for the scale
/// subresource: "fibermpi.io/job-name=JOB,fibermpi.io/role=worker".
std::string worker_selector(std::string_view job);
/// Label selector of every object of the job: "fibermpi.io/job-name=JOB".
std::string job_selector(std::string_view job);

/// Parses a worker-index label value: a decimal number without sign or leading zeros.
std::optional<int> parse_worker_index(std::string_view text);

/// The "namespace/name" key of an object in the work queue and the expectations.
std::string object_key(std::string_view ns, std::string_view name);

}  // namespace fiber::k8s::controller
