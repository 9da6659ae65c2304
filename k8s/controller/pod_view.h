// What the reconciler needs to know of an observed pod, read once from its JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace fiber::k8s::controller {

/// An observed pod of a FiberJob.
struct PodView {
  std::string name;
  std::string uid;
  /// Value of the fibermpi.io/role label ("" when absent).
  std::string role;
  /// The fibermpi.io/worker-index label, when it is a valid index.
  std::optional<int> worker_index;
  /// status.phase: Pending, Running, Succeeded, Failed or Unknown ("Pending" when unset).
  std::string phase;
  /// Running and ready: the Ready condition is True (a Running pod that has no Ready condition
  /// at all counts as ready, as nothing else could say otherwise).
  bool ready = false;
  /// metadata.deletionTimestamp is set: the pod is going away.
  bool being_deleted = false;
  /// The exit code of a finished pod: the first non-zero code of a terminated container, else 0;
  /// unset while no container has terminated.
  std::optional<int> exit_code;
  /// state.terminated.message of the container whose code is exit_code ("" when none): what the
  /// program wrote to its termination-message file, or the end of its log
  /// (terminationMessagePolicy FallbackToLogsOnError).
  std::string termination_message;

  /// Succeeded or Failed: its containers will not run again (restartPolicy Never).
  bool finished() const { return phase == "Succeeded" || phase == "Failed"; }
  /// Neither finished nor being deleted: the pod still counts toward the job.
  bool live() const { return !finished() && !being_deleted; }
};

/// Reads the facts of `pod`.
PodView view_pod(const nlohmann::json& pod);

/// True when `object` has a controller ownerReference to the object with uid `owner_uid`.
bool is_controlled_by(const nlohmann::json& object, const std::string& owner_uid);

}  // namespace fiber::k8s::controller
