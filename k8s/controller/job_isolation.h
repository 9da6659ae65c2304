// Who may join a FiberJob's universe: its own pods alone. The job's Secret NAME-join-token holds
// a random token mounted into the launcher and the workers (never readable through the
// launcher's Role: a mount, not an API read), which they prove to each other before a worker
// joins (the runtime's join handshake); its NetworkPolicy NAME admits to the job's pods only
// traffic from the job's own pods (launcher, name service and workers among themselves, on
// every port: Open MPI's are random), where the cluster's network plugin enforces policies.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "k8s/controller/job_spec.h"

namespace fiber::k8s::controller {

/// The Secret's key, and so the file's name in the mounted folder.
inline constexpr const char* kJoinTokenKey = "token";
/// Where the Secret is mounted in the launcher's and the workers' first container.
inline constexpr const char* kJoinTokenMountPath = "/var/run/secrets/fibermpi.io/join";
/// The file the runtime reads: FIBER_JOIN_TOKEN_FILE's value.
inline constexpr const char* kJoinTokenFilePath = "/var/run/secrets/fibermpi.io/join/token";
/// Name of the pod volume holding the Secret.
inline constexpr const char* kJoinTokenVolumeName = "fibermpi-join-token";

/// A new token: 32 bytes from the kernel's random source (getrandom), as 64 hex digits (text, so
/// that any tool that shows or mounts the Secret keeps it intact). Throws std::runtime_error
/// when the kernel gives none.
std::string random_join_token();

/// Secret NAME-join-token of type Opaque holding `token` under kJoinTokenKey, owned by the job.
nlohmann::json build_join_token_secret(const JobSpec& job, const std::string& token);

/// NetworkPolicy NAME, owned by the job: ingress to the job's pods only from the job's pods.
nlohmann::json build_network_policy(const JobSpec& job);

/// Adds the Secret's volume to `pod` and mounts it read-only at kJoinTokenMountPath in its first
/// container, with FIBER_JOIN_TOKEN_FILE=kJoinTokenFilePath (unless the container sets it).
void mount_join_token(nlohmann::json& pod, const JobSpec& job);

}  // namespace fiber::k8s::controller
