#include "k8s/controller/job_spec.h"

#include <algorithm>
#include <limits>
#include <string_view>

namespace fiber::k8s::controller {
namespace {

using nlohmann::json;

// The member `key` of `parent` when present and not null.
const json* member(const json& parent, std::string_view key) {
  if (!parent.is_object()) return nullptr;
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string required_string(const json& parent, std::string_view key, const std::string& path) {
  const json* value = member(parent, key);
  if (value == nullptr || !value->is_string() || value->get<std::string>().empty()) {
    throw InvalidJobError(path + " is required and must be a non-empty string");
  }
  return value->get<std::string>();
}

const json& required_object(const json& parent, std::string_view key, const std::string& path) {
  const json* value = member(parent, key);
  if (value == nullptr || !value->is_object()) {
    throw InvalidJobError(path + " is required and must be an object");
  }
  return *value;
}

template <typename Int>
std::optional<Int> optional_count(const json& parent, std::string_view key, const std::string& path,
                                  std::int64_t minimum) {
  const json* value = member(parent, key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_number_integer()) throw InvalidJobError(path + " must be an integer");
  const auto number = value->get<std::int64_t>();
  if (number < minimum || number > static_cast<std::int64_t>(std::numeric_limits<Int>::max())) {
    throw InvalidJobError(path + " must be at least " + std::to_string(minimum) + ", not " +
                          std::to_string(number));
  }
  return static_cast<Int>(number);
}

CleanPodPolicy parse_clean_pod_policy(const json& run_policy) {
  const json* value = member(run_policy, "cleanPodPolicy");
  if (value == nullptr) return CleanPodPolicy::kRunning;
  const std::string text = value->is_string() ? value->get<std::string>() : std::string();
  if (text == "Running") return CleanPodPolicy::kRunning;
  if (text == "All") return CleanPodPolicy::kAll;
  if (text == "None") return CleanPodPolicy::kNone;
  throw InvalidJobError("spec.runPolicy.cleanPodPolicy must be Running, All or None, not " +
                        value->dump());
}

std::set<std::string> parse_workers_to_delete(const json& workers) {
  std::set<std::string> names;
  const json* list = member(workers, "workersToDelete");
  if (list == nullptr) return names;
  if (!list->is_array()) throw InvalidJobError("spec.workers.workersToDelete must be a list");
  for (const json& name : *list) {
    if (!name.is_string()) {
      throw InvalidJobError("spec.workers.workersToDelete must hold pod names, not " + name.dump());
    }
    names.insert(name.get<std::string>());
  }
  return names;
}

}  // namespace

std::int32_t JobSpec::desired_workers(std::int32_t requested_by_program) const {
  const std::int32_t wanted = std::max(replicas.value_or(min_replicas), requested_by_program);
  return std::min(std::max(wanted, min_replicas), max_replicas);
}

JobSpec parse_job_spec(const json& job) {
  JobSpec spec;
  const json& metadata = required_object(job, "metadata", "metadata");
  spec.name = required_string(metadata, "name", "metadata.name");
  spec.ns = required_string(metadata, "namespace", "metadata.namespace");
  spec.uid = required_string(metadata, "uid", "metadata.uid");
  spec.generation =
      optional_count<std::int64_t>(metadata, "generation", "metadata.generation", 0).value_or(0);
  spec.being_deleted = member(metadata, "deletionTimestamp") != nullptr;

  const json& body = required_object(job, "spec", "spec");
  spec.launcher_template = required_object(required_object(body, "launcher", "spec.launcher"),
                                           "template", "spec.launcher.template");
  const json& workers = required_object(body, "workers", "spec.workers");
  spec.worker_template = required_object(workers, "template", "spec.workers.template");
  if (const json* name_service = member(body, "nameService")) {
    if (const json* name_service_template = member(*name_service, "template")) {
      if (!name_service_template->is_object()) {
        throw InvalidJobError("spec.nameService.template must be an object");
      }
      spec.name_service_template = *name_service_template;
    }
  }

  if (const json* config = member(body, "config")) {
    if (!config->is_string()) throw InvalidJobError("spec.config must be a string (a fiber.yaml)");
    spec.config = config->get<std::string>();
  }

  spec.replicas = optional_count<std::int32_t>(workers, "replicas", "spec.workers.replicas", 0);
  spec.min_replicas =
      optional_count<std::int32_t>(workers, "minReplicas", "spec.workers.minReplicas", 0)
          .value_or(0);
  const auto max_replicas =
      optional_count<std::int32_t>(workers, "maxReplicas", "spec.workers.maxReplicas", 0);
  if (!max_replicas) throw InvalidJobError("spec.workers.maxReplicas is required");
  spec.max_replicas = *max_replicas;
  if (spec.min_replicas > spec.max_replicas) {
    throw InvalidJobError(
        "spec.workers.minReplicas must be less than or equal to spec.workers.maxReplicas");
  }
  spec.slots_per_worker =
      optional_count<std::int32_t>(workers, "slotsPerWorker", "spec.workers.slotsPerWorker", 1)
          .value_or(1);
  spec.workers_to_delete = parse_workers_to_delete(workers);

  static const json kNoRunPolicy = json::object();
  const json* run_policy = member(body, "runPolicy");
  const json& policy = run_policy != nullptr ? *run_policy : kNoRunPolicy;
  if (const json* suspend = member(policy, "suspend")) {
    if (!suspend->is_boolean()) throw InvalidJobError("spec.runPolicy.suspend must be a boolean");
    spec.suspend = suspend->get<bool>();
  }
  spec.active_deadline_seconds = optional_count<std::int64_t>(
      policy, "activeDeadlineSeconds", "spec.runPolicy.activeDeadlineSeconds", 1);
  spec.ttl_seconds_after_finished = optional_count<std::int32_t>(
      policy, "ttlSecondsAfterFinished", "spec.runPolicy.ttlSecondsAfterFinished", 0);
  spec.clean_pod_policy = parse_clean_pod_policy(policy);
  spec.max_worker_replacements = optional_count<std::int32_t>(
      policy, "maxWorkerReplacements", "spec.runPolicy.maxWorkerReplacements", 0);
  spec.node_loss_toleration_seconds =
      optional_count<std::int64_t>(policy, "nodeLossTolerationSeconds",
                                   "spec.runPolicy.nodeLossTolerationSeconds", 0)
          .value_or(kDefaultNodeLossTolerationSeconds);
  if (spec.node_loss_toleration_seconds > kMaxNodeLossTolerationSeconds) {
    throw InvalidJobError("spec.runPolicy.nodeLossTolerationSeconds must be at most " +
                          std::to_string(kMaxNodeLossTolerationSeconds));
  }
  return spec;
}

}  // namespace fiber::k8s::controller
