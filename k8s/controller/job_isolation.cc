#include "k8s/controller/job_isolation.h"

#include <sys/random.h>

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
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

namespace {

// The labels a pod of `role` carries: its template's, then the controller's over them.
std::map<std::string, std::string> pod_labels(const JobSpec& job, const json& pod_template,
                                              std::string_view role) {
  std::map<std::string, std::string> labels;
  if (pod_template.is_object()) {
    const json::json_pointer pointer("/metadata/labels");
    if (pod_template.contains(pointer) && pod_template.at(pointer).is_object()) {
      for (const auto& [key, value] : pod_template.at(pointer).items())
        if (value.is_string()) labels[key] = value.get<std::string>();
    }
  }
  labels[std::string(kJobNameLabel)] = job.name;
  labels[std::string(kRoleLabel)] = std::string(role);
  return labels;
}

bool holds(const json& list, const std::string& text) {
  return list.is_array() &&
         std::any_of(list.begin(), list.end(), [&](const json& item) { return item == text; });
}

// One requirement of matchExpressions. An operator the API server would not have accepted
// selects nothing.
bool requirement_holds(const json& requirement, const std::map<std::string, std::string>& labels) {
  const std::string key = requirement.value("key", "");
  const std::string op = requirement.value("operator", "");
  const json values = requirement.value("values", json::array());
  const auto found = labels.find(key);
  if (op == "Exists") return found != labels.end();
  if (op == "DoesNotExist") return found == labels.end();
  if (op == "In") return found != labels.end() && holds(values, found->second);
  if (op == "NotIn") return found == labels.end() || !holds(values, found->second);
  return false;
}

}  // namespace

bool selector_matches(const json& selector, const std::map<std::string, std::string>& labels) {
  if (!selector.is_object()) return false;  // a null selector selects nothing
  if (const auto match = selector.find("matchLabels");
      match != selector.end() && match->is_object()) {
    for (const auto& [key, value] : match->items()) {
      const auto found = labels.find(key);
      if (found == labels.end() || value != found->second) return false;
    }
  }
  if (const auto expressions = selector.find("matchExpressions");
      expressions != selector.end() && expressions->is_array()) {
    for (const json& requirement : *expressions)
      if (!requirement.is_object() || !requirement_holds(requirement, labels)) return false;
  }
  return true;
}

std::vector<std::string> job_roles_with_egress_isolated(const json& policy, const JobSpec& job) {
  const json spec = policy.value("spec", json::object());
  // The API server fills policyTypes in (Ingress, and Egress where the egress section holds a
  // rule); an object from elsewhere may still lack it.
  const bool egress =
      spec.contains("policyTypes")
          ? holds(spec["policyTypes"], "Egress")
          : spec.contains("egress") && spec["egress"].is_array() && !spec["egress"].empty();
  if (!egress) return {};
  const json selector = spec.value("podSelector", json::object());
  std::vector<std::string> roles;
  const std::pair<std::string_view, const json*> pods[] = {
      {kLauncherRole, &job.launcher_template},
      {kNameServiceRole, &job.name_service_template},
      {kWorkerRole, &job.worker_template}};  // sorted by role
  for (const auto& [role, pod_template] : pods) {
    if (selector_matches(selector, pod_labels(job, *pod_template, role))) roles.emplace_back(role);
  }
  return roles;
}

EgressPeer parse_egress_peer(const std::string& text) {
  const auto refuse = [&](const std::string& why) {
    return std::invalid_argument("'" + text + "' is not ADDRESS:PORT or CIDR:PORT: " + why);
  };
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) throw refuse("no port");
  std::string address = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  int port = 0;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size() || port < 1 ||
      port > 65535) {
    throw refuse("the port must be 1 to 65535");
  }
  const bool bracketed = address.size() > 2 && address.front() == '[' && address.back() == ']';
  if (bracketed) address = address.substr(1, address.size() - 2);
  std::string prefix;
  const auto slash = address.find('/');
  if (slash != std::string::npos) {
    prefix = address.substr(slash + 1);
    address = address.substr(0, slash);
    if (prefix.empty()) throw refuse("an empty prefix length");
  }
  // fd00::1:443 could be fd00::1 port 443 or fd00::1:443 with no port.
  if (!bracketed && slash == std::string::npos && address.find(':') != std::string::npos)
    throw refuse("write an IPv6 address in brackets, [ADDRESS]:PORT");
  std::array<unsigned char, 16> bytes{};
  const bool v4 = inet_pton(AF_INET, address.c_str(), bytes.data()) == 1;
  const bool v6 = !v4 && inet_pton(AF_INET6, address.c_str(), bytes.data()) == 1;
  if (!v4 && !v6) throw refuse("'" + address + "' is no IPv4 or IPv6 address");
  const int longest = v4 ? 32 : 128;
  int length = longest;
  if (!prefix.empty()) {
    const auto [prefix_end, prefix_error] =
        std::from_chars(prefix.data(), prefix.data() + prefix.size(), length);
    if (prefix_error != std::errc() || prefix_end != prefix.data() + prefix.size() || length < 0 ||
        length > longest) {
      throw refuse("the prefix length must be 0 to " + std::to_string(longest));
    }
  }
  // The network's own address (host bits cleared), as the API server writes a CIDR.
  for (int bit = length; bit < longest; ++bit)
    bytes[bit / 8] &= static_cast<unsigned char>(~(0x80u >> (bit % 8)));
  std::array<char, INET6_ADDRSTRLEN> canonical{};
  inet_ntop(v4 ? AF_INET : AF_INET6, bytes.data(), canonical.data(), canonical.size());
  return EgressPeer{std::string(canonical.data()) + "/" + std::to_string(length), port};
}

std::vector<EgressPeer> egress_peers_of_endpoint_slice(const json& slice) {
  std::vector<EgressPeer> peers;
  const json ports = slice.value("ports", json::array());
  for (const json& endpoint : slice.value("endpoints", json::array())) {
    // "ready" unset means ready (discovery.k8s.io/v1).
    if (endpoint.value("conditions", json::object()).value("ready", true) == false) continue;
    for (const json& address : endpoint.value("addresses", json::array())) {
      if (!address.is_string()) continue;
      for (const json& port : ports) {
        if (!port.contains("port") || !port["port"].is_number_integer()) continue;
        const std::string text = address.get<std::string>();
        const bool v6 = text.find(':') != std::string::npos;
        peers.push_back(parse_egress_peer((v6 ? "[" + text + "]" : text) + ":" +
                                          std::to_string(port["port"].get<int>())));
      }
    }
  }
  return peers;
}

json build_egress_network_policy(const JobSpec& job, const std::vector<std::string>& roles,
                                 const std::vector<EgressPeer>& api_server) {
  json rules = json::array();
  rules.push_back({{"to", {{{"podSelector", job_pods(job)}}}}});
  rules.push_back(
      {{"to",
        {{{"namespaceSelector",
           {{"matchLabels", {{"kubernetes.io/metadata.name", "kube-system"}}}}},
          {"podSelector", {{"matchLabels", {{"k8s-app", "kube-dns"}}}}}}}},
       {"ports", {{{"protocol", "UDP"}, {"port", 53}}, {{"protocol", "TCP"}, {"port", 53}}}}});
  for (const EgressPeer& peer : api_server) {
    rules.push_back({{"to", {{{"ipBlock", {{"cidr", peer.cidr}}}}}},
                     {"ports", {{{"protocol", "TCP"}, {"port", peer.port}}}}});
  }
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", isolation_metadata(job, egress_network_policy_name(job.name))},
          {"spec",
           {{"podSelector",
             {{"matchLabels", {{std::string(kJobNameLabel), job.name}}},
              {"matchExpressions",
               {{{"key", std::string(kRoleLabel)}, {"operator", "In"}, {"values", roles}}}}}},
            {"policyTypes", {"Egress"}},
            {"egress", std::move(rules)}}}};
}

void mount_join_token(json& pod, const JobSpec& job) {
  mount_in_first_container(pod,
                           {{"name", kJoinTokenVolumeName},
                            {"secret", {{"secretName", join_token_secret_name(job.name)}}}},
                           kJoinTokenMountPath, "FIBER_JOIN_TOKEN_FILE", kJoinTokenFilePath);
}

}  // namespace fiber::k8s::controller
