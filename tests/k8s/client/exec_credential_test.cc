// Exec credential plugins, run as real processes (shell scripts standing in for aws, gke-gcloud-
// auth-plugin or kubelogin, which print an ExecCredential), and a client that uses one against a
// scripted server: the token sent, cached until it expires, fetched again after a 401.
#include "k8s/client/exec_credential.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "k8s/client/api_client.h"
#include "k8s/client/errors.h"
#include "k8s/client/time_format.h"
#include "tests/k8s/client/fake_api_server.h"
#include "tests/k8s/client/temp_folder.h"

namespace fiber::k8s {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::FakeApiServer;

constexpr const char* kV1 = "client.authentication.k8s.io/v1";

class ExecCredentialTest : public ::testing::Test {
 protected:
  // An executable shell script named `name` in the test's folder.
  ExecPlugin plugin(const std::string& name, const std::string& script) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << "#!/bin/sh\n" << script;
    ::chmod(path.c_str(), 0755);
    ExecPlugin plugin;
    plugin.api_version = kV1;
    plugin.command = path.string();
    plugin.interactive_mode = "Never";
    plugin.user = "u";
    return plugin;
  }

  // A plugin printing `token` (and the number of its runs into dir_/runs), expiring in `expiry`.
  ExecPlugin token_plugin(const std::string& token, const std::string& expiry = {}) {
    const std::string status =
        expiry.empty()
            ? R"({"token":")" + token + R"("})"
            : R"({"token":")" + token + R"(","expirationTimestamp":")" + expiry + R"("})";
    return plugin("token", "echo run >> '" + (dir_ / "runs").string() +
                               "'\necho '{\"apiVersion\":\"" + kV1 +
                               "\",\"kind\":\"ExecCredential\",\"status\":" + status + "}'\n");
  }

  int runs() const {
    std::ifstream in(dir_ / "runs");
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    return lines;
  }

  void expect_error(const ExecPlugin& plugin, const std::string& part,
                    std::chrono::seconds limit = std::chrono::seconds(60)) {
    try {
      run_exec_plugin(plugin, {"https://k", "", false}, limit);
      ADD_FAILURE() << "no error, expected one containing " << part;
    } catch (const ConfigError& error) {
      EXPECT_NE(std::string(error.what()).find(part), std::string::npos)
          << "message: " << error.what() << "\nexpected to contain: " << part;
    }
  }

  testing::TempFolder folder_{"exec_credential_test"};
  const fs::path& dir_ = folder_.path();
};

TEST_F(ExecCredentialTest, ATokenWithItsExpiryAndThePluginsEnvironment) {
  // The plugin sees its env entries and KUBERNETES_EXEC_INFO, with the cluster when asked to.
  ExecPlugin reader = plugin("reader", R"(printf '%s' "$KUBERNETES_EXEC_INFO" > "$OUT"
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
 "status":{"token":"tok-'"$PROFILE"'","expirationTimestamp":"2030-01-02T03:04:05Z"}}'
)");
  reader.env = {{"PROFILE", "ml"}, {"OUT", (dir_ / "info.json").string()}};
  reader.provide_cluster_info = true;
  const ExecCredential credential = run_exec_plugin(reader, {"https://k:6443", "CA-PEM", false});
  EXPECT_EQ(credential.token, "tok-ml");
  EXPECT_TRUE(credential.client_cert_pem.empty());
  ASSERT_TRUE(credential.expires);
  EXPECT_EQ(format_time(*credential.expires), "2030-01-02T03:04:05Z");
  std::ifstream in(dir_ / "info.json");
  const json info = json::parse(in);
  EXPECT_EQ(
      info,
      (json{{"apiVersion", kV1},
            {"kind", "ExecCredential"},
            {"spec",
             {{"interactive", false},
              {"cluster",
               {{"server", "https://k:6443"}, {"certificate-authority-data", "Q0EtUEVN"}}}}}}));
}

TEST_F(ExecCredentialTest, AClientCertificateAndKey) {
  const ExecCredential credential = run_exec_plugin(
      plugin("cert",
             R"(echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
 "status":{"clientCertificateData":"CERT","clientKeyData":"KEY"}}'
)"),
      {"https://k", "", false});
  EXPECT_EQ(credential.client_cert_pem, "CERT");
  EXPECT_EQ(credential.client_key_pem, "KEY");
  EXPECT_TRUE(credential.token.empty());
  EXPECT_FALSE(credential.expires);
}

TEST_F(ExecCredentialTest, APluginThatFailsIsReportedWithWhatItSaid) {
  expect_error(
      plugin("login", "echo 'error: you must be logged in (run: aws sso login)' >&2\nexit 3\n"),
      "exited with status 3: error: you must be logged in (run: aws sso login)");
  ExecPlugin missing = plugin("unused", "");
  missing.command = "fibermpi-no-such-auth-plugin";
  missing.install_hint = "install it with: apt-get install the-plugin";
  expect_error(missing,
               "\"fibermpi-no-such-auth-plugin\" of user \"u\" cannot be run: No such "
               "file or directory (install it with: apt-get install the-plugin)");
  expect_error(plugin("text", "echo hello\n"), "printed no JSON ExecCredential: \"hello\"");
  expect_error(
      plugin("kind",
             "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"Pod\"}'\n"),
      "printed no ExecCredential (kind \"Pod\")");
  expect_error(plugin("version",
                      "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
                      "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}'\n"),
               "answered with apiVersion \"client.authentication.k8s.io/v1beta1\", not the "
               "kubeconfig's \"client.authentication.k8s.io/v1\"");
  expect_error(plugin("empty",
                      "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                      "\"kind\":\"ExecCredential\",\"status\":{}}'\n"),
               "gave neither a token nor a client certificate");
  expect_error(plugin("half",
                      "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                      "\"kind\":\"ExecCredential\",\"status\":{\"clientKeyData\":\"K\"}}'\n"),
               "a key without its certificate");
  expect_error(plugin("expiry",
                      "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                      "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\","
                      "\"expirationTimestamp\":\"tomorrow\"}}'\n"),
               "expirationTimestamp that is no RFC 3339 time: \"tomorrow\"");
  // One that never answers is killed, not waited for.
  expect_error(plugin("hang", "exec sleep 600\n"), "gave no credential within 1 s and was killed",
               std::chrono::seconds(1));
  ExecPlugin interactive = plugin("prompt", "");
  interactive.interactive_mode = "Always";
  expect_error(interactive, "needs a terminal (interactiveMode Always)");
}

TEST_F(ExecCredentialTest, TheCredentialIsKeptUntilItExpires) {
  ExecCredentialSource lasting(token_plugin("a", "2099-01-01T00:00:00Z"), {"https://k", "", false});
  EXPECT_EQ(lasting.current().token, "a");
  EXPECT_EQ(lasting.current().token, "a");
  EXPECT_EQ(runs(), 1);
  // Within the last 10 s of its life a credential is fetched again for every use.
  const std::string soon = format_time(std::chrono::system_clock::now() + std::chrono::seconds(5));
  ExecCredentialSource expiring(token_plugin("b", soon), {"https://k", "", false});
  expiring.current();
  expiring.current();
  EXPECT_EQ(runs(), 3);
  // invalidate() forgets only the token it was told about.
  lasting.invalidate("not-a");
  lasting.current();
  EXPECT_EQ(runs(), 3);
  lasting.invalidate("a");
  lasting.current();
  EXPECT_EQ(runs(), 4);
}

// kubectl's behaviour: a refused plugin token is fetched again once, and the request resent.
TEST_F(ExecCredentialTest, TheClientSendsThePluginsTokenAndFetchesItAgainAfterA401) {
  std::mutex mutex;
  std::vector<std::string> seen;
  FakeApiServer server([&](httplib::Server& http) {
    http.Get(".*", [&](const httplib::Request& request, httplib::Response& response) {
      const std::string authorization = request.get_header_value("Authorization");
      {
        std::lock_guard lock(mutex);
        seen.push_back(authorization);
      }
      if (authorization != "Bearer second") {
        response.status = 401;
        response.set_content(testing::status_body(401, "Unauthorized", "Unauthorized"),
                             "application/json");
        return;
      }
      response.set_content(R"({"kind":"Pod","metadata":{"name":"p"}})", "application/json");
    });
  });
  // Each run prints the token of its turn: first, then second, then third.
  const fs::path turn = dir_ / "turn";
  std::ofstream(turn) << "first\n";
  ExecPlugin rotating = plugin("rotating", "read token < '" + turn.string() +
                                               "'\ncase $token in first) next=second ;; *) "
                                               "next=third ;; esac\necho $next > '" +
                                               turn.string() + "'\necho '{\"apiVersion\":\"" + kV1 +
                                               "\",\"kind\":\"ExecCredential\",\"status\":"
                                               "{\"token\":\"'$token'\"}}'\n");
  ClusterAccess access = server.access();
  access.exec = rotating;
  ApiClient client(access);
  const ResourceRef pods{"", "v1", "pods", "ns"};
  EXPECT_EQ(client.get(pods, "p")["metadata"]["name"], "p");
  EXPECT_EQ(client.get(pods, "p")["metadata"]["name"], "p");  // the cached second token
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(seen, (std::vector<std::string>{"Bearer first", "Bearer second", "Bearer second"}));
  }
  // A token refused twice stands as the server's 401.
  access.exec = plugin("refused", "echo '{\"apiVersion\":\"" + std::string(kV1) +
                                      "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":"
                                      "\"revoked\"}}'\n");
  ApiClient refused(access);
  try {
    refused.get(pods, "p");
    ADD_FAILURE() << "a refused credential was accepted";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code(), 401);
  }
  std::lock_guard lock(mutex);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "Bearer revoked"), 2);
}

}  // namespace
}  // namespace fiber::k8s
