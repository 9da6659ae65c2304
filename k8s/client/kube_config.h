// How to reach an API server and who to be there: from a kubeconfig file or from the service
// account a pod runs as.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "k8s/client/exec_credential.h"

namespace fiber::k8s {

/// Where the service-account token, CA and namespace of a pod are mounted.
inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Everything a client needs to talk to one API server as one user.
struct ClusterAccess {
  /// Base URL without a trailing slash, e.g. "https://10.0.0.1:443" or "http://127.0.0.1:8080".
  std::string server;
  /// PEM bundle of the CAs that sign the server's certificate; empty means the system store.
  std::string ca_pem;
  /// Skip verification of the server's certificate (kubeconfig insecure-skip-tls-verify).
  bool insecure_skip_tls_verify = false;
  /// A static bearer token; empty when none (or when token_file is used).
  std::string token;
  /// A file holding the bearer token, re-read when it changes (projected tokens rotate); wins
  /// over `token` when set.
  std::filesystem::path token_file;
  /// PEM client certificate and key for TLS client authentication; empty when none.
  std::string client_cert_pem;
  std::string client_key_pem;
  /// A credential plugin the client runs for its token or certificate (kubeconfig
  /// users[].user.exec: EKS, GKE, AKS, OIDC); unset when none.
  std::optional<ExecPlugin> exec;
  /// The namespace of the context (kubeconfig) or of the pod (in-cluster); "default" otherwise.
  std::string default_namespace = "default";
  /// Where this came from, for messages: "kubeconfig /path (context c)" or "in-cluster".
  std::string origin;
};

/// The kubeconfig path used when none is given: the first entry of $KUBECONFIG (':'-separated)
/// when set and non-empty, else $HOME/.kube/config.
std::filesystem::path default_kubeconfig_path();

/// Loads a kubeconfig file. `path` empty: default_kubeconfig_path(). `context` empty: the file's
/// current-context. Reads clusters[].cluster.{server, certificate-authority(-data),
/// insecure-skip-tls-verify}, users[].user.{token, tokenFile, client-certificate(-data),
/// client-key(-data), exec} and contexts[].context.{cluster, user, namespace}; relative file paths
/// are resolved against the kubeconfig's folder, as is an exec command given as a relative path.
/// Throws ConfigError naming the file and the missing context, cluster, user or field, an
/// unreadable referenced file, a malformed exec entry, or what is not supported: an
/// auth-provider user (gone from kubectl since 1.26), basic authentication, a cluster's
/// tls-server-name or proxy-url.
ClusterAccess load_kubeconfig(const std::filesystem::path& path = {},
                              const std::string& context = {});

/// True when the environment says this process runs in a pod (KUBERNETES_SERVICE_HOST and
/// KUBERNETES_SERVICE_PORT both set).
bool in_cluster_environment();

/// Loads the in-cluster configuration: server
/// https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (an IPv6 host is bracketed), token
/// file `<dir>/token`, CA `<dir>/ca.crt`, namespace
/// `<dir>/namespace` (optional: "default" when absent). Throws ConfigError naming the missing
/// variable or file.
ClusterAccess load_in_cluster(
    const std::filesystem::path& service_account_dir = kServiceAccountDir);

/// In-cluster when in_cluster_environment(), else load_kubeconfig() with its defaults.
ClusterAccess load_default();

}  // namespace fiber::k8s
