#include "k8s/controller/job_isolation.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "k8s/controller/object_names.h"
#include "k8s/controller/pod_builder.h"

namespace fiber::k8s::controller {
namespace {

using nlohmann::json;

json isolation_metadata(const JobSpec& job, const std::string& name) {
  return {{"name", name},
          {"namespace", job.ns},
          {"labels", {{std::string(kJobNameLabel), job.name}}},
          {"ownerReferences", json::array({owner_reference(job)})}};
}

json job_pods(const JobSpec& job) {
  return {{"matchLabels", {{std::string(kJobNameLabel), job.name}}}};
}

}  // namespace

std::string random_join_token() {
  std::array<unsigned char, 32> bytes{};
  size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t got = ::getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      throw std::runtime_error(std::string("no random bytes for a join token: ") +
                               std::strerror(errno));
    }
    filled += static_cast<size_t>(got);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char byte : bytes) {
    token += kHex[byte >> 4];
    token += kHex[byte & 0xf];
  }
  return token;
}

json build_join_token_secret(const JobSpec& job, const std::string& token) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", isolation_metadata(job, join_token_secret_name(job.name))},
          {"type", "Opaque"},
          {"stringData", {{kJoinTokenKey, token}}}};
}

json build_network_policy(const JobSpec& job) {
  // Ingress only: what the job's pods reach outside (the API server, images, data) is the
  // user's to limit. Every port: groups talk worker to worker on Open MPI's random ports.
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", isolation_metadata(job, network_policy_name(job.name))},
          {"spec",
           {{"podSelector", job_pods(job)},
            {"policyTypes", {"Ingress"}},
            {"ingress", {{{"from", {{{"podSelector", job_pods(job)}}}}}}}}}};
}

void mount_join_token(json& pod, const JobSpec& job) {
  mount_in_first_container(pod,
                           {{"name", kJoinTokenVolumeName},
                            {"secret", {{"secretName", join_token_secret_name(job.name)}}}},
                           kJoinTokenMountPath, "FIBER_JOIN_TOKEN_FILE", kJoinTokenFilePath);
}

}  // namespace fiber::k8s::controller
