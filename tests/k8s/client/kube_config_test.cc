#include "k8s/client/kube_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <string>

#include "k8s/client/errors.h"
#include "tests/k8s/client/temp_folder.h"

namespace fiber::k8s {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test, removed afterwards.
class KubeConfigTest : public ::testing::Test {
 protected:
  fs::path write(const fs::path& relative, const std::string& text) {
    const fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path;
  }

  // Expects load_kubeconfig(path) to throw ConfigError whose message contains `part`.
  void expect_error(const fs::path& path, const std::string& part,
                    const std::string& context = {}) {
    try {
      load_kubeconfig(path, context);
      ADD_FAILURE() << "no error, expected one naming " << part;
    } catch (const ConfigError& error) {
      EXPECT_NE(std::string(error.what()).find(part), std::string::npos)
          << "message: " << error.what() << "\nexpected to contain: " << part;
    }
  }

  testing::TempFolder folder_{"kube_config_test"};
  const fs::path& dir_ = folder_.path();
};

// A kubeconfig whose current context names cluster k and user u, up to u's `user:` key: a test
// appends the user's fields.
constexpr const char* kUserHead = R"(current-context: c
clusters:
- name: k
  cluster: {server: "https://k"}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
)";

// base64 of "CA-PEM", "CERT-PEM", "KEY-PEM".
constexpr const char* kCaData = "Q0EtUEVN";
constexpr const char* kCertData = "Q0VSVC1QRU0=";
constexpr const char* kKeyData = "S0VZLVBFTQ==";

TEST_F(KubeConfigTest, TokenUserOfTheCurrentContext) {
  const fs::path path = write("config", R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: )" + std::string(kCaData) +
                                            R"(
- name: other
  cluster:
    server: https://other
contexts:
- name: dev
  context: {cluster: dev-cluster, user: alice, namespace: team}
- name: second
  context: {cluster: other, user: bob}
users:
- name: alice
  user: {token: secret-token}
- name: bob
  user: {token: bob-token}
)");
  const ClusterAccess access = load_kubeconfig(path);
  EXPECT_EQ(access.server, "https://10.0.0.1:6443");
  EXPECT_EQ(access.ca_pem, "CA-PEM");
  EXPECT_EQ(access.token, "secret-token");
  EXPECT_EQ(access.default_namespace, "team");
  EXPECT_FALSE(access.insecure_skip_tls_verify);
  EXPECT_NE(access.origin.find("dev"), std::string::npos);

  const ClusterAccess second = load_kubeconfig(path, "second");
  EXPECT_EQ(second.server, "https://other");
  EXPECT_EQ(second.token, "bob-token");
  EXPECT_EQ(second.default_namespace, "default");
}

TEST_F(KubeConfigTest, ClientCertificateFromData) {
  const fs::path path = write("config", R"(current-context: c
clusters:
- name: k
  cluster: {server: "https://k:443", insecure-skip-tls-verify: true}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
    client-certificate-data: )" + std::string(kCertData) +
                                            R"(
    client-key-data: )" + std::string(kKeyData) +
                                            "\n");
  const ClusterAccess access = load_kubeconfig(path);
  EXPECT_TRUE(access.insecure_skip_tls_verify);
  EXPECT_EQ(access.client_cert_pem, "CERT-PEM");
  EXPECT_EQ(access.client_key_pem, "KEY-PEM");
  EXPECT_TRUE(access.token.empty());
}

TEST_F(KubeConfigTest, FilesAreResolvedAgainstTheKubeconfigFolder) {
  write("kube/pki/ca.crt", "CA FROM FILE");
  write("kube/pki/client.crt", "CERT FROM FILE");
  const fs::path key = write("elsewhere/client.key", "KEY FROM FILE");
  write("kube/token", "rotating-token\n");
  const fs::path path = write("kube/config", R"(current-context: c
clusters:
- name: k
  cluster: {server: "https://k", certificate-authority: pki/ca.crt}
contexts:
- name: c
  context: {cluster: k, user: u}
- name: t
  context: {cluster: k, user: token-file-user}
users:
- name: u
  user: {client-certificate: pki/client.crt, client-key: )" +
                                                 key.string() + R"(}
- name: token-file-user
  user: {tokenFile: token}
)");
  const ClusterAccess access = load_kubeconfig(path);
  EXPECT_EQ(access.ca_pem, "CA FROM FILE");
  EXPECT_EQ(access.client_cert_pem, "CERT FROM FILE");
  EXPECT_EQ(access.client_key_pem, "KEY FROM FILE");

  const ClusterAccess with_token_file = load_kubeconfig(path, "t");
  EXPECT_EQ(with_token_file.token_file, dir_ / "kube" / "token");
}

TEST_F(KubeConfigTest, KubeconfigVariableNamesTheDefaultFile) {
  const fs::path first = write("first", "current-context: x\n");
  setenv("KUBECONFIG", (first.string() + ":" + (dir_ / "second").string()).c_str(), 1);
  EXPECT_EQ(default_kubeconfig_path(), first);
  setenv("KUBECONFIG", "", 1);
  setenv("HOME", dir_.c_str(), 1);
  EXPECT_EQ(default_kubeconfig_path(), dir_ / ".kube" / "config");
  unsetenv("KUBECONFIG");
}

TEST_F(KubeConfigTest, ErrorsNameTheMissingPiece) {
  const std::string clusters = R"(clusters:
- name: k
  cluster: {server: "https://k"}
)";
  expect_error(dir_ / "absent", "absent");
  expect_error(write("no-current", clusters), "no current-context");
  expect_error(write("no-context", "current-context: ghost\n" + clusters), "context \"ghost\"");
  expect_error(write("no-cluster", R"(current-context: c
contexts:
- name: c
  context: {cluster: gone, user: u}
)"),
               "cluster \"gone\"");
  expect_error(write("no-user", "current-context: c\n" + clusters + R"(contexts:
- name: c
  context: {cluster: k, user: nobody}
)"),
               "user \"nobody\"");
  expect_error(write("no-server", R"(current-context: c
clusters:
- name: k
  cluster: {certificate-authority-data: Q0EtUEVN}
contexts:
- name: c
  context: {cluster: k}
)"),
               "has no server");
  expect_error(write("missing-ca", R"(current-context: c
clusters:
- name: k
  cluster: {server: "https://k", certificate-authority: missing-ca.pem}
contexts:
- name: c
  context: {cluster: k}
)"),
               "missing-ca.pem");
  expect_error(write("bad-base64", R"(current-context: c
clusters:
- name: k
  cluster: {server: "https://k", certificate-authority-data: "%%%"}
contexts:
- name: c
  context: {cluster: k}
)"),
               "certificate-authority-data is not valid base64");
  expect_error(write("yaml", "current-context: [unclosed\n"), "not valid YAML");
}

TEST_F(KubeConfigTest, PluginsAreRefusedClearly) {
  const std::string head = kUserHead;
  expect_error(write("auth-provider", head + "    auth-provider: {name: gcp}\n"),
               "auth-provider plugin, which kubectl dropped in 1.26 and this client does not "
               "support: use the provider's exec plugin");
  expect_error(write("half-cert", head + "    client-certificate-data: " + kCertData + "\n"),
               "without a key");
  expect_error(write("basic", head + "    username: admin\n    password: secret\n"),
               "basic authentication, which is not supported");
  expect_error(write("proxy", R"(current-context: c
clusters:
- name: k
  cluster: {server: "https://k", proxy-url: "http://proxy:3128"}
contexts:
- name: c
  context: {cluster: k}
)"),
               "cluster \"k\" sets proxy-url, which is not supported");
}

// What EKS's, GKE's and AKS's kubeconfigs hold: a credential plugin.
TEST_F(KubeConfigTest, ExecPluginsAreReadAsClientGoReadsThem) {
  const std::string head = std::string(kUserHead) + "    exec:\n";
  const ClusterAccess eks =
      load_kubeconfig(write("eks", head + R"(      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args: [--region, eu-west-1, eks, get-token, --cluster-name, prod]
      env:
      - {name: AWS_PROFILE, value: ml}
)"));
  ASSERT_TRUE(eks.exec);
  EXPECT_EQ(eks.exec->api_version, "client.authentication.k8s.io/v1beta1");
  EXPECT_EQ(eks.exec->command, "aws");  // a bare name: looked up in PATH
  EXPECT_EQ(eks.exec->args, (std::vector<std::string>{"--region", "eu-west-1", "eks", "get-token",
                                                      "--cluster-name", "prod"}));
  EXPECT_EQ(eks.exec->env,
            (std::vector<std::pair<std::string, std::string>>{{"AWS_PROFILE", "ml"}}));
  EXPECT_EQ(eks.exec->interactive_mode, "IfAvailable");  // v1beta1's default
  EXPECT_FALSE(eks.exec->provide_cluster_info);
  EXPECT_EQ(eks.exec->user, "u");

  const ClusterAccess gke =
      load_kubeconfig(write("gke", head + R"(      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/gke-gcloud-auth-plugin
      installHint: Install gke-gcloud-auth-plugin for use with kubectl
      provideClusterInfo: true
      interactiveMode: Never
)"));
  ASSERT_TRUE(gke.exec);
  // A relative path is relative to the kubeconfig's folder.
  EXPECT_EQ(gke.exec->command, (dir_ / "bin/gke-gcloud-auth-plugin").string());
  EXPECT_TRUE(gke.exec->provide_cluster_info);
  EXPECT_EQ(gke.exec->interactive_mode, "Never");
  EXPECT_EQ(gke.exec->install_hint, "Install gke-gcloud-auth-plugin for use with kubectl");

  expect_error(write("v1-no-mode", head + "      {apiVersion: client.authentication.k8s.io/v1, "
                                          "command: kubelogin}\n"),
               "user \"u\" exec: interactiveMode must be given (Never, IfAvailable or Always) "
               "for v1");
  expect_error(write("alpha", head + "      {apiVersion: client.authentication.k8s.io/v1alpha1, "
                                     "command: x}\n"),
               "apiVersion \"client.authentication.k8s.io/v1alpha1\" is not "
               "client.authentication.k8s.io/v1 or v1beta1");
  expect_error(write("no-command", head + "      {apiVersion: client.authentication.k8s.io/v1, "
                                          "interactiveMode: Never}\n"),
               "user \"u\" exec has no command");
  expect_error(write("mode", head + "      {apiVersion: client.authentication.k8s.io/v1, "
                                    "command: x, interactiveMode: Sometimes}\n"),
               "interactiveMode \"Sometimes\" is not Never, IfAvailable or Always");
  expect_error(write("env", head + "      {apiVersion: client.authentication.k8s.io/v1, "
                                   "command: x, interactiveMode: Never, env: [{value: v}]}\n"),
               "an env entry has no name");
}

TEST_F(KubeConfigTest, InClusterFromServiceAccountFolder) {
  write("sa/token", "sa-token");
  write("sa/ca.crt", "SA CA");
  write("sa/namespace", "jobs\n");
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  EXPECT_TRUE(in_cluster_environment());
  ClusterAccess access = load_in_cluster(dir_ / "sa");
  EXPECT_EQ(access.server, "https://10.96.0.1:443");
  EXPECT_EQ(access.token_file, dir_ / "sa" / "token");
  EXPECT_EQ(access.ca_pem, "SA CA");
  EXPECT_EQ(access.default_namespace, "jobs");

  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  access = load_in_cluster(dir_ / "sa");
  EXPECT_EQ(access.server, "https://[fd00::1]:443");

  fs::remove(dir_ / "sa" / "ca.crt");
  try {
    load_in_cluster(dir_ / "sa");
    ADD_FAILURE() << "no error without ca.crt";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("ca.crt"), std::string::npos) << error.what();
  }
  unsetenv("KUBERNETES_SERVICE_PORT");
  EXPECT_FALSE(in_cluster_environment());
  try {
    load_in_cluster(dir_ / "sa");
    ADD_FAILURE() << "no error without KUBERNETES_SERVICE_PORT";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("KUBERNETES_SERVICE_PORT"), std::string::npos);
  }
  unsetenv("KUBERNETES_SERVICE_HOST");
}

TEST_F(KubeConfigTest, LoadDefaultUsesKubeconfigOutsideAPod) {
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  const fs::path path = write("config", R"(current-context: c
clusters:
- name: k
  cluster: {server: "http://127.0.0.1:8080"}
contexts:
- name: c
  context: {cluster: k}
)");
  setenv("KUBECONFIG", path.c_str(), 1);
  EXPECT_EQ(load_default().server, "http://127.0.0.1:8080");
  unsetenv("KUBECONFIG");
}

}  // namespace
}  // namespace fiber::k8s
