// What the launcher may do on the API server: its own ServiceAccount, and a Role (with its
// RoleBinding) that lets the program read its FiberJob and ask for and release worker pods through
// its release ConfigMap, on that one job alone.
#pragma once

#include <nlohmann/json.hpp>

#include "k8s/controller/job_spec.h"

namespace fiber::k8s::controller {

/// ServiceAccount NAME-launcher, owned by the job; the launcher pod runs as it.
nlohmann::json build_launcher_service_account(const JobSpec& job);

/// Role NAME-launcher, owned by the job: get on fiberjobs, get and update on ConfigMap
/// NAME-release, each limited to the job's own by resourceNames.
nlohmann::json build_launcher_role(const JobSpec& job);

/// RoleBinding NAME-launcher, owned by the job: binds the Role to the ServiceAccount.
nlohmann::json build_launcher_role_binding(const JobSpec& job);

}  // namespace fiber::k8s::controller
