#include "k8s/controller/pod_view.h"

#include "k8s/client/json_fields.h"
#include "k8s/controller/object_names.h"

namespace fiber::k8s::controller {
namespace {

using nlohmann::json;

bool has_ready_condition(const json& status, bool* ready) {
  auto conditions = status.find("conditions");
  if (conditions == status.end() || !conditions->is_array()) return false;
  for (const json& condition : *conditions) {
    if (condition.value("type", "") == "Ready") {
      *ready = condition.value("status", "") == "True";
      return true;
    }
  }
  return false;
}

// The first non-zero code of a terminated container (else 0) and that container's message.
std::optional<int> first_exit_code(const json& status, std::string* message) {
  auto statuses = status.find("containerStatuses");
  if (statuses == status.end() || !statuses->is_array()) return std::nullopt;
  std::optional<int> code;
  for (const json& container : *statuses) {
    const json::json_pointer terminated("/state/terminated/exitCode");
    if (!container.contains(terminated) || !container.at(terminated).is_number_integer()) continue;
    const int exit_code = container.at(terminated).get<int>();
    const std::string text = string_at(container, json::json_pointer("/state/terminated/message"));
    if (exit_code != 0) {
      *message = text;
      return exit_code;
    }
    if (!code) *message = text;
    code = 0;
  }
  return code;
}

}  // namespace

PodView view_pod(const json& pod) {
  PodView view;
  view.name = metadata_field(pod, "name");
  view.uid = metadata_field(pod, "uid");
  view.role = label_value(pod, kRoleLabel);
  view.worker_index = parse_worker_index(label_value(pod, kWorkerIndexLabel));
  view.phase = string_at(pod, json::json_pointer("/status/phase"));
  if (view.phase.empty()) view.phase = "Pending";
  view.being_deleted = pod.contains(json::json_pointer("/metadata/deletionTimestamp")) &&
                       !pod.at(json::json_pointer("/metadata/deletionTimestamp")).is_null();
  const json status = pod.value("status", json::object());
  if (status.is_object()) {
    bool ready = false;
    const bool reported = has_ready_condition(status, &ready);
    view.ready = view.phase == "Running" && (reported ? ready : true);
    view.exit_code = first_exit_code(status, &view.termination_message);
  }
  return view;
}

bool is_controlled_by(const json& object, const std::string& owner_uid) {
  const json::json_pointer pointer("/metadata/ownerReferences");
  if (!object.contains(pointer) || !object.at(pointer).is_array()) return false;
  for (const json& reference : object.at(pointer)) {
    if (reference.value("uid", "") == owner_uid && reference.value("controller", false)) {
      return true;
    }
  }
  return false;
}

}  // namespace fiber::k8s::controller
