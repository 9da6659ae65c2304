// Status conditions in the standard Kubernetes form (type, status, reason, message,
// observedGeneration, lastTransitionTime), kept in a JSON array as the API stores them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace fiber::k8s::controller {

/// The condition types of a FiberJob (k8s/README.md).
namespace condition_type {
inline constexpr std::string_view kCreated = "Created";
inline constexpr std::string_view kNameServiceReady = "NameServiceReady";
inline constexpr std::string_view kLauncherRunning = "LauncherRunning";
inline constexpr std::string_view kWorkersReady = "WorkersReady";
inline constexpr std::string_view kWorkersFailing = "WorkersFailing";
inline constexpr std::string_view kDegraded = "Degraded";
inline constexpr std::string_view kSuspended = "Suspended";
inline constexpr std::string_view kSucceeded = "Succeeded";
inline constexpr std::string_view kFailed = "Failed";
inline constexpr std::string_view kNameConflict = "NameConflict";
}  // namespace condition_type

/// One condition to set.
struct Condition {
  std::string_view type;
  bool status = false;
  std::string reason;
  std::string message;
};

/// Sets `condition` in `conditions` (a JSON array, null counts as empty), stamped with
/// `generation`. lastTransitionTime becomes `now` (a metav1.Time string) when the condition is new
/// or its status changes, and is kept otherwise, so an unchanged condition leaves the array equal.
void set_condition(nlohmann::json& conditions, const Condition& condition, std::int64_t generation,
                   const std::string& now);

/// The condition of `type` in `conditions`, or null.
const nlohmann::json* find_condition(const nlohmann::json& conditions, std::string_view type);

/// True when `conditions` holds `type` with status "True".
bool condition_is_true(const nlohmann::json& conditions, std::string_view type);

}  // namespace fiber::k8s::controller
