// The reconciler's decisions: a pure function from a FiberJob, the objects observed for it and
// the time to the plan of what to create, delete and record, and the job's new status.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "k8s/client/time_format.h"
#include "k8s/controller/job_isolation.h"
#include "k8s/controller/job_spec.h"
#include "k8s/controller/pod_builder.h"

namespace fiber::k8s::controller {

/// An object holding one of the job's own names (its Service, name-service or launcher pod, the
/// launcher's ServiceAccount, Role or RoleBinding, its ConfigMaps, its join-token Secret or
/// NetworkPolicy) that the job does not control.
struct ForeignObject {
  std::string kind;
  std::string name;
  /// Who controls it, e.g. "ReplicaSet web-7d4f" or "no controller".
  std::string controller;
  friend bool operator==(const ForeignObject&, const ForeignObject&) = default;
};

/// "KIND NAME" of `object`'s controller ownerReference, or "no controller".
std::string describe_controller(const nlohmann::json& object);

/// What the controller saw of a job.
/// Which of the launcher's ServiceAccount, Role and RoleBinding (NAME-launcher) exist, controlled
/// by the job.
struct LauncherAccess {
  bool service_account = false;
  bool role = false;
  bool role_binding = false;
};

/// Which of the job's join-token Secret and NetworkPolicy (job_isolation.h) exist, controlled by
/// the job.
struct JobIsolation {
  bool join_token_secret = false;
  bool network_policy = false;
};

/// A pod create the API server refused (an invalid template, a quota, an admission webhook),
/// as the controller's last attempt met it.
struct RefusedCreation {
  std::string role;  ///< the pod's fibermpi.io/role: launcher, worker or name-service
  std::string name;
  long code = 0;  ///< HTTP status
  std::string message;
  friend bool operator==(const RefusedCreation&, const RefusedCreation&) = default;
};

struct ObservedState {
  /// The job's current status (null or an object).
  nlohmann::json status;
  /// Pods labelled with the job's name (those the job does not control are ignored).
  std::vector<nlohmann::json> pods;
  /// True when the job's Service exists.
  bool service_exists = false;
  /// The job's ConfigMap NAME-config (controlled by the job), or null when there is none.
  nlohmann::json config_map;
  /// Objects with the job's names that the job does not control, besides the pods in `pods`
  /// (which the reconciler checks itself). While there is any, nothing is created for the job.
  std::vector<ForeignObject> foreign_objects;
  /// The job's release ConfigMap NAME-release (controlled by the job), or null when there is none.
  nlohmann::json release_config_map;
  /// The launcher's account and Role; a missing one is created in every pass of a running job.
  LauncherAccess launcher_access;
  /// The launcher's Role (controlled by the job), or null when there is none: one whose rules are
  /// not the ones this controller grants (made by an older version, edited by hand) is replaced.
  nlohmann::json launcher_role;
  /// The join-token Secret and the NetworkPolicy; a missing one is created in every pass of a
  /// running job.
  JobIsolation isolation;
  /// The roles of the job's pods whose egress NetworkPolicies of the job's namespace that the job
  /// does not control isolate (job_roles_with_egress_isolated; sorted, each once): those pods
  /// then need the egress policy NAME.egress.
  std::vector<std::string> egress_isolated_roles;
  /// NAME.egress (controlled by the job), or null when there is none.
  nlohmann::json egress_policy;
  /// Pod creates refused since the last create of that role succeeded. A launcher or
  /// name-service pod refused as invalid (400, 422) fails the job: its template will not become
  /// valid by trying again. Refused workers set WorkersFailing, and are tried again.
  std::vector<RefusedCreation> refused_creations;
  /// The URI read from the name-service pod's log, when the controller read it for this pass.
  std::optional<std::string> name_service_uri_from_log;
  /// When the controller's passes first found, without a pass in between that did not, fewer live
  /// workers than the last pass counted and than any release or scale-down explains (the plan's
  /// `unexplained_shortfall`); unset when the last pass found none.
  std::optional<SystemTime> unexplained_shortfall_since;
  /// The time of the decision.
  SystemTime now;
};

/// Settings of the controller that shape the objects it creates.
struct ReconcileSettings {
  std::string name_service_image = kDefaultNameServiceImage;
  /// Makes the token of a join-token Secret to create (tests give a fixed one).
  std::function<std::string()> new_join_token = random_join_token;
  /// Where the API server listens, for the egress policy of a namespace that isolates egress
  /// (the launcher asks it for pods); empty when unknown, which a warning Event then says.
  std::vector<EgressPeer> api_server_egress;
};

/// An object other than a pod to delete (its uid as the precondition).
struct ObjectDeletion {
  std::string kind;
  std::string name;
  std::string uid;
  /// Why, for the log and the Event.
  std::string reason;
  friend bool operator==(const ObjectDeletion&, const ObjectDeletion&) = default;
};

/// A pod to delete, with its uid as the precondition so that a newer pod of the same name is
/// never deleted by mistake.
struct PodDeletion {
  std::string name;
  std::string uid;
  /// Why, for the log and the Event.
  std::string reason;
  friend bool operator==(const PodDeletion&, const PodDeletion&) = default;
};

/// An Event about the job itself (creations and deletions get theirs once they succeed).
struct JobEvent {
  bool warning = false;
  std::string reason;
  std::string message;
  friend bool operator==(const JobEvent&, const JobEvent&) = default;
};

/// What one reconcile pass decided.
struct ReconcilePlan {
  /// Objects to create, in order (the Service first, then pods).
  std::vector<nlohmann::json> creations;
  /// Objects to replace (with the resourceVersion they were read at): the job's ConfigMap when
  /// spec.config changed, the launcher's Role when its rules are not the ones granted.
  std::vector<nlohmann::json> updates;
  /// Pods to delete.
  std::vector<PodDeletion> deletions;
  /// Other objects to delete: the egress NetworkPolicy once no policy of the namespace isolates
  /// the job's egress (alone, it would isolate the pods itself).
  std::vector<ObjectDeletion> object_deletions;
  /// Events about the job.
  std::vector<JobEvent> events;
  /// The job's status after this pass; written only when it differs from the observed one.
  nlohmann::json status;
  /// The job finished longer than ttlSecondsAfterFinished ago: delete it.
  bool delete_job = false;
  /// Look at the job again after this long (a deadline, a TTL, a URI not printed yet).
  std::optional<std::chrono::seconds> requeue_after;
  /// The name-service pod runs and its URI is unknown: read its log and reconcile again with
  /// ObservedState::name_service_uri_from_log.
  bool read_name_service_log = false;
  /// Fewer workers live than the last pass counted, with no release or scale-down seen that
  /// explains it. Where a worker ended Succeeded and is not listed, it counts as a loss only once
  /// it has lasted kLossConfirmation: the pods, the job and its release ConfigMap come on
  /// separate watch streams, so a pod the program released can end in the cache before the
  /// release list and the lowered scale that explain it arrive. A failed or deleted worker is
  /// counted at once.
  bool unexplained_shortfall = false;
};

/// How long an unexplained shortfall of workers must last before it counts as lost workers (and
/// their replacements are made): long enough for one watch stream to catch up with another.
inline constexpr std::chrono::seconds kLossConfirmation{2};

/// Decides what to do for `job` given `observed` (the rules are listed in
/// k8s/controller/README.md).
ReconcilePlan reconcile(const JobSpec& job, const ObservedState& observed,
                        const ReconcileSettings& settings);

}  // namespace fiber::k8s::controller
