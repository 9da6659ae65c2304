// The client against the development cluster's API server stand-in (a real HTTP server with
// Kubernetes semantics), started as a child process for this test program.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "k8s/client/api_client.h"
#include "k8s/client/event_recorder.h"
#include "k8s/client/informer.h"
#include "k8s/client/kube_config.h"
#include "k8s/client/leader_election.h"

extern char** environ;

namespace fiber::k8s {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

const ResourceRef kConfigMaps{"", "v1", "configmaps", "default"};

// Starts `python -m k8s.devcluster.apiserver` on a free port and stops it at the end.
class StandInServer {
 public:
  /// Starts the server on plain HTTP, or with `extra_args` (TLS and authentication options).
  explicit StandInServer(const std::vector<std::string>& extra_args = {}) {
    const char* python = std::getenv("FIBER_VENV_PYTHON");
    const char* source = std::getenv("FIBER_SOURCE_DIR");
    if (!python || !source || !fs::exists(python)) {
      error_ = "FIBER_VENV_PYTHON / FIBER_SOURCE_DIR not set or the Python missing";
      return;
    }
    std::string dir = (fs::temp_directory_path() / "client_apiserver_test.XXXXXX").string();
    if (!mkdtemp(dir.data())) {
      error_ = "cannot create a temporary folder";
      return;
    }
    dir_ = dir;
    const std::string port_file = (dir_ / "port").string();
    const std::string state_dir = (dir_ / "state").string();
    std::vector<std::string> args = {python,
                                     "-m",
                                     "k8s.devcluster.apiserver",
                                     "--port",
                                     "0",
                                     "--port-file",
                                     port_file,
                                     "--state-dir",
                                     state_dir,
                                     "--watch-history",
                                     "10",
                                     "--bookmark-interval",
                                     "0.2"};
    // Plain HTTP without authentication unless TLS options are given.
    if (extra_args.empty()) args.push_back("--insecure");
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, (dir_ / "log").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    // The module is found relative to the checkout.
    posix_spawn_file_actions_addchdir_np(&actions, source);
    const int spawned = posix_spawn(&pid_, python, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
      error_ = "cannot start the API server stand-in";
      pid_ = -1;
      return;
    }
    // No notification comes from the child but the port file: look for it until it appears.
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in(port_file);
      int port = 0;
      if (in >> port && port > 0) {
        url_ = (extra_args.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") +
               std::to_string(port);
        return;
      }
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        std::ifstream log(dir_ / "log");
        error_ = "the API server stand-in exited: " +
                 std::string(std::istreambuf_iterator<char>(log), {});
        return;
      }
      std::this_thread::sleep_for(20ms);
    }
    error_ = "the API server stand-in wrote no port within 30 s";
  }

  ~StandInServer() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status;
      waitpid(pid_, &status, 0);
    }
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  const std::string& error() const { return error_; }
  const std::string& url() const { return url_; }

  ClusterAccess access() const {
    ClusterAccess access;
    access.server = url_;
    return access;
  }

 private:
  pid_t pid_ = -1;
  fs::path dir_;
  std::string url_;
  std::string error_;
};

class ApiServerIntegration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new StandInServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(server_->error().empty()) << server_->error(); }

  static json config_map(const std::string& name, const std::string& label) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"labels", {{"test", label}}}}},
            {"data", {{"key", "value"}}}};
  }

  static StandInServer* server_;
};

StandInServer* ApiServerIntegration::server_ = nullptr;

TEST_F(ApiServerIntegration, CrudConflictsAndErrors) {
  ApiClient client(server_->access());
  const json created = client.create(kConfigMaps, config_map("crud", "crud"));
  const std::string uid = created["metadata"]["uid"];
  EXPECT_FALSE(uid.empty());
  try {
    client.create(kConfigMaps, config_map("crud", "crud"));
    FAIL() << "a second create succeeded";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.is_already_exists()) << error.what();
  }

  json fetched = client.get(kConfigMaps, "crud");
  fetched["data"]["key"] = "changed";
  const json replaced = client.replace(kConfigMaps, fetched);
  EXPECT_EQ(replaced["data"]["key"], "changed");
  try {
    client.replace(kConfigMaps, fetched);  // the resourceVersion read before is stale now
    FAIL() << "a stale replace succeeded";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.is_conflict()) << error.what();
    EXPECT_EQ(error.reason(), "Conflict");
  }

  client.patch(kConfigMaps, "crud", {{"data", {{"merged", "yes"}}}});
  client.patch(kConfigMaps, "crud",
               json::array({{{"op", "add"}, {"path", "/data/patched"}, {"value", "json"}}}),
               PatchType::kJson);
  const json patched = client.get(kConfigMaps, "crud");
  EXPECT_EQ(patched["data"]["merged"], "yes");
  EXPECT_EQ(patched["data"]["patched"], "json");

  ListOptions by_label;
  by_label.label_selector = "test=crud";
  by_label.page_size = 1;
  client.create(kConfigMaps, config_map("crud-2", "crud"));
  const ListResult listed = client.list(kConfigMaps, by_label);
  EXPECT_EQ(listed.items.size(), 2u);
  EXPECT_FALSE(listed.resource_version.empty());

  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "not-" + uid;
  try {
    client.remove(kConfigMaps, "crud", wrong_uid);
    FAIL() << "a delete with a wrong uid precondition succeeded";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.is_conflict()) << error.what();
  }
  DeleteOptions right_uid;
  right_uid.precondition_uid = uid;
  client.remove(kConfigMaps, "crud", right_uid);
  client.remove(kConfigMaps, "crud-2");
  try {
    client.get(kConfigMaps, "crud");
    FAIL() << "a deleted object is still there";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.is_not_found()) << error.what();
  }
}

TEST_F(ApiServerIntegration, InformerFollowsChangesAndBookmarks) {
  ApiClient client(server_->access());
  InformerOptions options;
  options.ref = kConfigMaps;
  options.label_selector = "test=informer";
  Informer informer(client, options);
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> heard;
  auto note = [&](std::string line) {
    std::lock_guard lock(mutex);
    heard.push_back(std::move(line));
    changed.notify_all();
  };
  informer.on_add(
      [&](const json& object) { note("add " + object["metadata"]["name"].get<std::string>()); });
  informer.on_update([&](const json&, const json& object) {
    note("update " + object["metadata"]["name"].get<std::string>());
  });
  informer.on_delete(
      [&](const json& object) { note("delete " + object["metadata"]["name"].get<std::string>()); });
  client.create(kConfigMaps, config_map("inf-a", "informer"));
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(10s));
  client.create(kConfigMaps, config_map("inf-b", "informer"));
  client.patch(kConfigMaps, "inf-a", {{"data", {{"key", "new"}}}});
  client.remove(kConfigMaps, "inf-b");
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, 10s, [&] { return heard.size() >= 4; }));
    EXPECT_EQ(heard,
              (std::vector<std::string>{"add inf-a", "add inf-b", "update inf-a", "delete inf-b"}));
  }
  EXPECT_EQ(informer.get("default", "inf-a").value()["data"]["key"], "new");

  // A change the selector hides still moves the informer on, by a bookmark.
  const json other = client.create(kConfigMaps, config_map("inf-other", "elsewhere"));
  const long long target = std::stoll(other["metadata"]["resourceVersion"].get<std::string>());
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::stoll(informer.resource_version()) < target &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);  // bookmarks carry no notification to wait on
  }
  EXPECT_GE(std::stoll(informer.resource_version()), target);
  informer.stop();
  client.remove(kConfigMaps, "inf-a");
  client.remove(kConfigMaps, "inf-other");
}

TEST_F(ApiServerIntegration, WatchFromAnExpiredVersionIsGone) {
  ApiClient client(server_->access());
  const std::string before = client.list(kConfigMaps).resource_version;
  for (int i = 0; i < 15; ++i)
    client.create(kConfigMaps, config_map("gone-" + std::to_string(i), "gone"));
  try {
    client.watch(kConfigMaps, before, {}, [](const WatchEvent&) { return true; });
    FAIL() << "a watch from a version past the history did not fail";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.is_gone()) << error.what();
  }
  for (int i = 0; i < 15; ++i) client.remove(kConfigMaps, "gone-" + std::to_string(i));
}

TEST_F(ApiServerIntegration, LeaseElectionHandsOver) {
  ApiClient client(server_->access());
  auto config = [](const std::string& identity) {
    LeaderElectionConfig c;
    c.identity = identity;
    c.lease_name = "integration-lock";
    c.lease_namespace = "default";
    c.lease_duration = 20s;
    c.renew_deadline = 10s;
    c.retry_period = 100ms;
    return c;
  };
  LeaderElector first(client, config("first"));
  LeaderElector second(client, config("second"));
  first.start();
  ASSERT_TRUE(first.wait_for_leadership(10s));
  second.start();
  EXPECT_FALSE(second.wait_for_leadership(500ms));
  first.stop();
  ASSERT_TRUE(second.wait_for_leadership(10s)) << "the released lease was not taken over at once";
  const json lease = client.get(leases_ref("default"), "integration-lock");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "second");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
  second.stop();
}

TEST_F(ApiServerIntegration, EventsAreRecordedAndAggregated) {
  ApiClient client(server_->access());
  const json subject = client.create(kConfigMaps, config_map("evented", "events"));
  EventRecorderOptions options;
  options.instance = "integration";
  EventRecorder recorder(client, options);
  ASSERT_TRUE(recorder.normal(subject, "Tested", "recorded by the integration test"));
  ASSERT_TRUE(recorder.normal(subject, "Tested", "recorded by the integration test"));
  ListOptions by_object;
  by_object.field_selector = "involvedObject.name=evented";
  ListResult events;
  try {
    events = client.list(events_ref("default"), by_object);
  } catch (const ApiError& error) {
    // Field selectors other than metadata.name may be refused; then filter here.
    ASSERT_TRUE(error.is_invalid() || error.code() == 400) << error.what();
    events = client.list(events_ref("default"));
    std::erase_if(events.items,
                  [](const json& event) { return event["involvedObject"]["name"] != "evented"; });
  }
  ASSERT_EQ(events.items.size(), 1u);
  EXPECT_EQ(events.items[0]["count"], 2);
  EXPECT_EQ(events.items[0]["involvedObject"]["uid"], subject["metadata"]["uid"]);
  EXPECT_EQ(recorder.failures(), 0u);
  client.remove(kConfigMaps, "evented");
}

// A CA, a server certificate for 127.0.0.1 and client certificates for an administrator
// (group system:masters) and for "bob" (no rights), made by the openssl command.
class Pki {
 public:
  Pki() {
    std::string dir = (fs::temp_directory_path() / "client_pki.XXXXXX").string();
    if (!mkdtemp(dir.data())) return;
    dir_ = dir;
    ok_ = openssl(
              "req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca -keyout ca.key "
              "-out ca.crt") &&
          write("server.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n") &&
          make_certificate("server", "/CN=apiserver", "-extfile server.ext") &&
          make_certificate("admin", "/O=system:masters/CN=alice", "") &&
          make_certificate("bob", "/O=developers/CN=bob", "") &&
          openssl("base64 -A -in ca.crt -out ca.b64") &&
          write("tokens.csv", "admin-token,admin,admin-uid,\"system:masters\"\n");
  }
  ~Pki() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  bool ok() const { return ok_; }
  fs::path path(const std::string& name) const { return dir_ / name; }
  std::string read(const std::string& name) const {
    std::ifstream in(path(name));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  bool write(const std::string& name, const std::string& text) const {
    std::ofstream out(path(name));
    out << text;
    return static_cast<bool>(out);
  }

 private:
  bool openssl(const std::string& args) const {
    const std::string command =
        "cd '" + dir_.string() + "' && openssl " + args + " > openssl.log 2>&1";
    return std::system(command.c_str()) == 0;
  }
  bool make_certificate(const std::string& name, const std::string& subject,
                        const std::string& extra) const {
    return openssl("req -newkey rsa:2048 -nodes -subj " + subject + " -keyout " + name +
                   ".key -out " + name + ".csr") &&
           openssl("x509 -req -in " + name +
                   ".csr -CA ca.crt -CAkey ca.key -CAcreateserial "
                   "-days 2 -out " +
                   name + ".crt " + extra);
  }

  fs::path dir_;
  bool ok_ = false;
};

// A kubeconfig for `server` with one cluster entry and one user entry given as YAML text.
std::string kubeconfig(const std::string& server, const std::string& cluster_fields,
                       const std::string& user_fields) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n"
         "    server: " +
         server + "\n" + cluster_fields +
         "contexts:\n- name: c\n  context: {cluster: k, user: u}\nusers:\n- name: u\n  user:\n" +
         user_fields;
}

TEST(ApiServerTls, CertificatesAndTokensFromAKubeconfig) {
  Pki pki;
  ASSERT_TRUE(pki.ok()) << "openssl failed; see " << pki.path("openssl.log");
  StandInServer server({"--tls-cert", pki.path("server.crt").string(), "--tls-key",
                        pki.path("server.key").string(), "--client-ca", pki.path("ca.crt").string(),
                        "--token-file", pki.path("tokens.csv").string()});
  ASSERT_TRUE(server.error().empty()) << server.error();

  // Client certificate and CA from files named relative to the kubeconfig.
  pki.write("by-files",
            kubeconfig(server.url(), "    certificate-authority: ca.crt\n",
                       "    client-certificate: admin.crt\n    client-key: admin.key\n"));
  ApiClient admin_by_cert(load_kubeconfig(pki.path("by-files")));
  EXPECT_NO_THROW(admin_by_cert.list(kConfigMaps));

  // Token with the CA as -data.
  pki.write("by-token",
            kubeconfig(server.url(), "    certificate-authority-data: " + pki.read("ca.b64") + "\n",
                       "    token: admin-token\n"));
  ApiClient admin_by_token(load_kubeconfig(pki.path("by-token")));
  EXPECT_NO_THROW(admin_by_token.list(kConfigMaps));

  // A valid certificate without rights: 403 with the server's wording.
  pki.write("bob", kubeconfig(server.url(), "    certificate-authority: ca.crt\n",
                              "    client-certificate: bob.crt\n    client-key: bob.key\n"));
  ApiClient bob(load_kubeconfig(pki.path("bob")));
  try {
    bob.list(kConfigMaps);
    FAIL() << "bob may list config maps";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.is_forbidden()) << error.what();
    EXPECT_NE(error.message().find("User \"bob\""), std::string::npos) << error.message();
  }

  // A wrong token: 401.
  pki.write("wrong",
            kubeconfig(server.url(), "    certificate-authority: ca.crt\n", "    token: wrong\n"));
  ApiClient wrong(load_kubeconfig(pki.path("wrong")));
  try {
    wrong.list(kConfigMaps);
    FAIL() << "a wrong token was accepted";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code(), 401) << error.what();
  }

  // The server's certificate is not trusted without its CA, unless verification is skipped.
  pki.write("no-ca", kubeconfig(server.url(), "", "    token: admin-token\n"));
  ApiClient untrusting(load_kubeconfig(pki.path("no-ca")));
  EXPECT_THROW(untrusting.list(kConfigMaps), TransportError);
  pki.write("insecure", kubeconfig(server.url(), "    insecure-skip-tls-verify: true\n",
                                   "    token: admin-token\n"));
  ApiClient insecure(load_kubeconfig(pki.path("insecure")));
  EXPECT_NO_THROW(insecure.list(kConfigMaps));
}

}  // namespace
}  // namespace fiber::k8s
