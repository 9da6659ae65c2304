#include "k8s/controller/conditions.h"

namespace fiber::k8s::controller {

using nlohmann::json;

const json* find_condition(const json& conditions, std::string_view type) {
  if (!conditions.is_array()) return nullptr;
  for (const json& condition : conditions) {
    if (condition.is_object() && condition.value("type", "") == type) return &condition;
  }
  return nullptr;
}

bool condition_is_true(const json& conditions, std::string_view type) {
  const json* condition = find_condition(conditions, type);
  return condition != nullptr && condition->value("status", "") == "True";
}

void set_condition(json& conditions, const Condition& condition, std::int64_t generation,
                   const std::string& now) {
  if (!conditions.is_array()) conditions = json::array();
  const std::string status = condition.status ? "True" : "False";
  json updated = {{"type", std::string(condition.type)}, {"status", status},
                  {"reason", condition.reason},          {"message", condition.message},
                  {"observedGeneration", generation},    {"lastTransitionTime", now}};
  for (json& existing : conditions) {
    if (!existing.is_object() || existing.value("type", "") != condition.type) continue;
    if (existing.value("status", "") == status && existing.contains("lastTransitionTime")) {
      updated["lastTransitionTime"] = existing["lastTransitionTime"];
    }
    existing = std::move(updated);
    return;
  }
  conditions.push_back(std::move(updated));
}

}  // namespace fiber::k8s::controller
