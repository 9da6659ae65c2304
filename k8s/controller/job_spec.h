// The FiberJob as the reconciler reads it: identity and spec, checked once, with defaults applied.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

namespace fiber::k8s::controller {

/// A FiberJob the controller cannot act on; what() names the field and the problem.
class InvalidJobError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Which pods are deleted when the job ends.
enum class CleanPodPolicy {
  kRunning,  ///< pods not finished yet (the default)
  kAll,      ///< every pod of the job
  kNone,     ///< none
};

/// spec.runPolicy.nodeLossTolerationSeconds when unset (the CRD's default).
inline constexpr std::int64_t kDefaultNodeLossTolerationSeconds = 30;
/// Its most (a day; the CRD's maximum).
inline constexpr std::int64_t kMaxNodeLossTolerationSeconds = 86400;

/// A FiberJob's identity and spec.
struct JobSpec {
  std::string name;
  std::string ns;
  std::string uid;
  std::int64_t generation = 0;
  /// True once the job is being deleted: the garbage collector removes its objects.
  bool being_deleted = false;

  nlohmann::json launcher_template;  ///< spec.launcher.template (a PodTemplateSpec)
  nlohmann::json worker_template;    ///< spec.workers.template
  /// spec.nameService.template; null when the controller's default name-service pod is used.
  nlohmann::json name_service_template;
  /// spec.config: the content of a fiber.yaml for every pod of the program; unset when absent.
  std::optional<std::string> config;

  std::optional<std::int32_t> replicas;
  std::int32_t min_replicas = 0;
  std::int32_t max_replicas = 0;
  std::int32_t slots_per_worker = 1;
  std::set<std::string> workers_to_delete;

  bool suspend = false;
  std::optional<std::int64_t> active_deadline_seconds;
  std::optional<std::int32_t> ttl_seconds_after_finished;
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kRunning;
  std::optional<std::int32_t> max_worker_replacements;
  /// spec.runPolicy.nodeLossTolerationSeconds: how long the job's pods stay bound to a node that
  /// is unreachable or not ready before they are evicted (the cluster's default is 300 s).
  std::int64_t node_loss_toleration_seconds = kDefaultNodeLossTolerationSeconds;

  /// Worker pods to keep: the larger of replicas (minReplicas when unset), which people and
  /// autoscalers set, and `requested_by_program` (the launcher's workersRequested), clamped to
  /// [minReplicas, maxReplicas].
  std::int32_t desired_workers(std::int32_t requested_by_program = 0) const;
};

/// Reads `job` (a FiberJob object). Throws InvalidJobError naming the field when metadata.name,
/// metadata.namespace, metadata.uid, spec.launcher.template or spec.workers.template is missing,
/// when a field has the wrong type or a negative count, or when minReplicas > maxReplicas.
JobSpec parse_job_spec(const nlohmann::json& job);

}  // namespace fiber::k8s::controller
