// Who may join a FiberJob's universe: its own pods alone. The job's Secret NAME-join-token holds
// a random token mounted into the launcher and the workers (never readable through the
// launcher's Role: a mount, not an API read), which they prove to each other before a worker
// joins (the runtime's join handshake); its NetworkPolicy NAME admits to the job's pods only
// traffic from the job's own pods (launcher, name service and workers among themselves, on
// every port: Open MPI's are random), where the cluster's network plugin enforces policies. Where
// another policy of the namespace isolates the job's egress (a default deny), its NetworkPolicy
// NAME.egress lets the job's pods reach each other, the cluster's DNS and the API server, and
// nothing else the administrator did not allow.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

/// An address block and a TCP port the job's pods may reach under an egress policy: where the
/// API server listens (its endpoints, not the `kubernetes` Service's cluster IP, which network
/// plugins see translated).
struct EgressPeer {
  std::string cidr;  ///< "10.0.0.1/32", "fd00::1/128"
  int port = 443;
  friend bool operator==(const EgressPeer&, const EgressPeer&) = default;
};

/// Reads "ADDRESS:PORT", "CIDR:PORT" or "[V6ADDRESS]:PORT" (a lone address becomes a /32 or
/// /128). Throws std::invalid_argument naming the text.
EgressPeer parse_egress_peer(const std::string& text);

/// The API server's endpoints in an EndpointSlice (`default/kubernetes`): one peer per ready
/// address and port.
std::vector<EgressPeer> egress_peers_of_endpoint_slice(const nlohmann::json& slice);

/// True when `selector` (a metav1.LabelSelector: matchLabels and matchExpressions with In,
/// NotIn, Exists, DoesNotExist) selects `labels`. An empty selector selects everything.
bool selector_matches(const nlohmann::json& selector,
                      const std::map<std::string, std::string>& labels);

/// The roles of the job's pods (launcher, worker, name-service, sorted) whose egress `policy` (a
/// NetworkPolicy of the job's namespace that the job does not control) isolates: Egress among its
/// policyTypes (given, or defaulted from a non-empty egress section) and a podSelector that selects
/// the labels of pods of that role (the controller's labels over their templates').
std::vector<std::string> job_roles_with_egress_isolated(const nlohmann::json& policy,
                                                        const JobSpec& job);

/// NetworkPolicy NAME.egress, owned by the job, for a namespace that isolates the egress of the
/// job's pods of `roles` (and no others: a policy naming Egress isolates every pod it selects):
/// they may reach the job's pods (any port), the cluster's DNS (pods labelled k8s-app=kube-dns
/// in namespace kube-system, port 53 over UDP and TCP) and `api_server`.
nlohmann::json build_egress_network_policy(const JobSpec& job,
                                           const std::vector<std::string>& roles,
                                           const std::vector<EgressPeer>& api_server);

/// Adds the Secret's volume to `pod` and mounts it read-only at kJoinTokenMountPath in its first
/// container, with FIBER_JOIN_TOKEN_FILE=kJoinTokenFilePath (unless the container sets it).
void mount_join_token(nlohmann::json& pod, const JobSpec& job);

}  // namespace fiber::k8s::controller
