// A kubeconfig user's exec credential plugin (client.authentication.k8s.io v1 and v1beta1): the
// command EKS (aws eks get-token, aws-iam-authenticator), GKE (gke-gcloud-auth-plugin), AKS
// (kubelogin) and OIDC helpers install, which prints an ExecCredential holding a bearer token or
// a client certificate. The client runs it when it needs a credential, keeps what it printed
// until shortly before it expires, and runs it again after the server answers 401.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fiber::k8s {

/// users[].user.exec of a kubeconfig.
struct ExecPlugin {
  /// client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1.
  std::string api_version;
  /// The program: a path, or a name looked up in PATH.
  std::string command;
  std::vector<std::string> args;
  /// Variables added to the plugin's environment (over this process's).
  std::vector<std::pair<std::string, std::string>> env;
  /// Pass the cluster (server, CA) in KUBERNETES_EXEC_INFO.
  bool provide_cluster_info = false;
  /// Shown when the command cannot be found (how to install it).
  std::string install_hint;
  /// Never, IfAvailable or Always. This client has no terminal to give a plugin: Always is refused.
  std::string interactive_mode = "IfAvailable";
  /// The kubeconfig user, for messages.
  std::string user;
};

/// What a plugin printed: a bearer token, or a client certificate and key (PEM).
struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  /// status.expirationTimestamp; unset: valid until the server refuses it.
  std::optional<std::chrono::system_clock::time_point> expires;
};

/// The cluster, as provideClusterInfo gives it to the plugin.
struct ExecClusterInfo {
  std::string server;
  std::string ca_pem;
  bool insecure_skip_tls_verify = false;
};

/// Runs `plugin` once, stdin /dev/null, with KUBERNETES_EXEC_INFO set, and reads its
/// ExecCredential from stdout. Throws ConfigError naming the user and the command: not found
/// (with the install hint), killed after `limit` without an answer, a non-zero exit (with the
/// end of its stderr), output that is not an ExecCredential of the plugin's apiVersion, or one
/// that holds neither a token nor a certificate and key.
ExecCredential run_exec_plugin(const ExecPlugin& plugin, const ExecClusterInfo& cluster,
                               std::chrono::seconds limit = std::chrono::seconds(60));

/// A plugin's credential, run again when it is about to expire or after invalidate().
class ExecCredentialSource {
 public:
  ExecCredentialSource(ExecPlugin plugin, ExecClusterInfo cluster);

  /// The credential to use now (runs the plugin when there is none, or it expires within 10 s).
  ExecCredential current();
  /// The server refused `token` (401): the next current() runs the plugin again, unless another
  /// thread already did since that token was handed out.
  void invalidate(const std::string& token);

 private:
  ExecPlugin plugin_;
  ExecClusterInfo cluster_;
  std::mutex mutex_;
  std::optional<ExecCredential> cached_;
};

}  // namespace fiber::k8s
