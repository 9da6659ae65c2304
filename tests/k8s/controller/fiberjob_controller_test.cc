// FiberJobController against a scripted API server: how it applies a plan (the order of its
// writes, the lead check before each, Events only with a written status).
#include "k8s/controller/fiberjob_controller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "tests/k8s/client/fake_api_server.h"

namespace fiber::k8s::controller {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::FakeApiServer;
using testing::LineChannel;
using testing::status_body;

json job_object(json status = json::object()) {
  const json container = {{"name", "main"}, {"image", "img"}};
  return {{"apiVersion", "fibermpi.io/v1alpha1"},
          {"kind", "FiberJob"},
          {"metadata",
           {{"name", "pi"},
            {"namespace", "ns"},
            {"uid", "job-uid"},
            {"generation", 1},
            {"resourceVersion", "10"}}},
          {"spec",
           {{"launcher", {{"template", {{"spec", {{"containers", {container}}}}}}}},
            {"workers",
             {{"template", {{"spec", {{"containers", {container}}}}}}, {"maxReplicas", 2}}}}},
          {"status", std::move(status)}};
}

json owned_pod(const std::string& name, const std::string& role, const std::string& phase) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"uid", name + "-uid"},
            {"resourceVersion", "5"},
            {"labels", {{"fibermpi.io/job-name", "pi"}, {"fibermpi.io/role", role}}},
            {"ownerReferences",
             {{{"apiVersion", "fibermpi.io/v1alpha1"},
               {"kind", "FiberJob"},
               {"name", "pi"},
               {"uid", "job-uid"},
               {"controller", true}}}}}},
          {"status", {{"phase", phase}}}};
}

// An object `name` of `kind` the job controls (the launcher's ServiceAccount, Role and
// RoleBinding, the job's join-token Secret and NetworkPolicy).
json owned_object(const std::string& api_version, const std::string& kind,
                  const std::string& name) {
  json object = owned_pod(name, "launcher", "");
  object["apiVersion"] = api_version;
  object["kind"] = kind;
  object.erase("status");
  return object;
}

// Lists what the test put in it, keeps watches open and silent, and records every write.
class ScriptedServer {
 public:
  /// `with_launcher_access`: the launcher's ServiceAccount, Role and RoleBinding exist, and the
  /// job's join-token Secret and NetworkPolicy.
  ScriptedServer(json job, std::vector<json> pods, int status_write_code = 200,
                 bool with_launcher_access = false)
      : job_(std::move(job)),
        pods_(std::move(pods)),
        status_write_code_(status_write_code),
        server_([this, with_launcher_access](httplib::Server& http) {
          list_route(http, "/apis/fibermpi.io/v1alpha1/fiberjobs",
                     [this] { return json::array({job_}); });
          list_route(http, "/api/v1/pods", [this] { return json(pods_); });
          list_route(http, "/api/v1/services", [] { return json::array(); });
          list_route(http, "/api/v1/configmaps", [] { return json::array(); });
          const auto access = [with_launcher_access](std::string api_version, std::string kind,
                                                     std::string name = "pi-launcher") {
            return [=] {
              return with_launcher_access ? json::array({owned_object(api_version, kind, name)})
                                          : json::array();
            };
          };
          list_route(http, "/api/v1/serviceaccounts", access("v1", "ServiceAccount"));
          list_route(http, "/apis/rbac.authorization.k8s.io/v1/roles",
                     access("rbac.authorization.k8s.io/v1", "Role"));
          list_route(http, "/apis/rbac.authorization.k8s.io/v1/rolebindings",
                     access("rbac.authorization.k8s.io/v1", "RoleBinding"));
          list_route(http, "/api/v1/secrets", access("v1", "Secret", "pi-join-token"));
          list_route(http, "/apis/networking.k8s.io/v1/networkpolicies",
                     access("networking.k8s.io/v1", "NetworkPolicy", "pi"));
          http.Post(R"(/api/v1/namespaces/ns/(\w+))",
                    [this](const httplib::Request& request, httplib::Response& response) {
                      const json body = json::parse(request.body);
                      record(request.matches[1].str() == "events"
                                 ? "event " + body.value("reason", std::string())
                                 : "create " + body.value("kind", std::string()) + " " +
                                       body["metadata"].value("name", std::string()));
                      response.status = 201;
                      response.set_content(body.dump(), "application/json");
                    });
          http.Put("/apis/fibermpi.io/v1alpha1/namespaces/ns/fiberjobs/pi/status",
                   [this](const httplib::Request& request, httplib::Response& response) {
                     record("status " +
                            json::parse(request.body)["status"].value("phase", std::string()));
                     response.status = status_write_code_;
                     response.set_content(
                         status_write_code_ == 200
                             ? request.body
                             : status_body(409, "Conflict", "the object has been modified"),
                         "application/json");
                   });
        }) {}

  ClusterAccess access() const { return server_.access(); }

  std::vector<std::string> writes() {
    std::lock_guard lock(mutex_);
    return writes_;
  }

 private:
  void list_route(httplib::Server& http, const std::string& path, std::function<json()> items) {
    http.Get(path, [this, items](const httplib::Request& request, httplib::Response& response) {
      if (request.get_param_value("watch") == "true") {
        server_.stream(response, std::make_shared<LineChannel>());
        return;
      }
      response.set_content(
          json{{"metadata", {{"resourceVersion", "20"}}}, {"items", items()}}.dump(),
          "application/json");
    });
  }

  void record(std::string write) {
    std::lock_guard lock(mutex_);
    writes_.push_back(std::move(write));
  }

  json job_;
  std::vector<json> pods_;
  int status_write_code_;
  std::mutex mutex_;
  std::vector<std::string> writes_;
  FakeApiServer server_;  // last: stopped first
};

struct Harness {
  explicit Harness(ScriptedServer& server) : client(server.access()), recorder(client, {}) {
    ControllerOptions options;
    options.workers = 1;
    options.log = [](LogLevel, std::string_view) {};
    controller = std::make_unique<FiberJobController>(client, recorder, metrics, options);
    controller->start_informers();
  }

  ApiClient client;
  EventRecorder recorder;
  ControllerMetrics metrics;
  std::unique_ptr<FiberJobController> controller;
};

TEST(FiberJobController, APassStopsAtTheFirstWriteAfterTheLeadIsInDoubt) {
  // A new job: the pass would create the Service and the name-service pod, then write the status.
  ScriptedServer server(job_object(), {});
  Harness harness(server);
  ASSERT_TRUE(harness.controller->wait_for_sync(10s));
  std::atomic<int> checks{0};
  // The lead holds for the first write only.
  harness.controller->set_lead_check([&] { return ++checks <= 1; });
  EXPECT_THROW(harness.controller->reconcile_key("ns/pi"), std::runtime_error);
  EXPECT_EQ(server.writes(),
            (std::vector<std::string>{"create Service pi", "event SuccessfulCreate"}));
  harness.controller->stop();
}

TEST(FiberJobController, EventsAboutTheJobWaitForTheStatusThatRecordsThem) {
  // The launcher failed; the status write that records it meets a 409: no Failed Event yet (the
  // next pass decides again and records it then), and no pod deleted before the end is written.
  json status = {{"startTime", "2026-01-01T11:00:00Z"},
                 {"nameService", {{"podName", "pi-nameservice"}, {"uri", "1.0;tcp://a:1"}}},
                 {"launcher", {{"podName", "pi-launcher"}, {"phase", "Running"}}}};
  ScriptedServer server(job_object(status),
                        {owned_pod("pi-nameservice", "name-service", "Running"),
                         owned_pod("pi-launcher", "launcher", "Failed")},
                        409, true);
  Harness harness(server);
  ASSERT_TRUE(harness.controller->wait_for_sync(10s));
  const KeyOutcome outcome = harness.controller->reconcile_key("ns/pi");
  EXPECT_EQ(outcome.result, ReconcileResult::kConflict);
  EXPECT_EQ(server.writes(), (std::vector<std::string>{"status Failed"}));
  harness.controller->stop();
}

}  // namespace
}  // namespace fiber::k8s::controller
