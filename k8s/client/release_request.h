// What a FiberJob's program asks of its job, in ConfigMap NAME-release: the worker pods it wants
// (key workersRequested, a count) and those it gives back (key workersToDelete, one pod name a
// line). The launcher writes it and the controller reads it; both read it here, so that they
// never disagree on what a value means.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace fiber::k8s {

/// The ConfigMap's keys.
inline constexpr const char* kReleaseListKey = "workersToDelete";
inline constexpr const char* kRequestedWorkersKey = "workersRequested";
/// The most worker pods a request may name: the CRD's bound on replicas.
inline constexpr std::int32_t kMostRequestedWorkers = 100000;

/// The pod names the ConfigMap lists, each line trimmed of blanks (a line a person edited is
/// still that pod). Lines that are no pod name (not a DNS-1123 subdomain of at most 253
/// characters) are left out and described in `refused`: the list is the program's to write, and
/// a bad line must not stop the job.
std::set<std::string> parse_release_list(const nlohmann::json& config_map,
                                         std::vector<std::string>& refused);

/// The worker pods the program asks for (0 when the key is absent or blank). A value that is no
/// count (a decimal from 0 to kMostRequestedWorkers between blanks) counts as 0 and is
/// described in `refused`, as above.
std::int32_t parse_requested_workers(const nlohmann::json& config_map,
                                     std::vector<std::string>& refused);

/// The value of key workersToDelete that lists `names`.
std::string release_list_text(const std::set<std::string>& names);

}  // namespace fiber::k8s
