#include "k8s/client/event_recorder.h"

#include <gtest/gtest.h>

#include <regex>

#include "tests/k8s/client/fake_api_server.h"

namespace fiber::k8s {
namespace {

using nlohmann::json;
using testing::FakeApiServer;
using testing::status_body;

const json kJob = {
    {"apiVersion", "fibermpi.io/v1alpha1"},
    {"kind", "FiberJob"},
    {"metadata",
     {{"name", "train"}, {"namespace", "ns"}, {"uid", "uid-7"}, {"resourceVersion", "42"}}}};

// Keeps the Events posted and the patches sent; fails every request while `failing`.
class EventServer {
 public:
  EventServer()
      : server_([this](httplib::Server& http) {
          http.Post("/api/v1/namespaces/ns/events",
                    [this](const httplib::Request& request, httplib::Response& response) {
                      std::lock_guard lock(mutex_);
                      if (failing_) return fail(response);
                      created_.push_back(json::parse(request.body));
                      response.status = 201;
                      response.set_content(request.body, "application/json");
                    });
          http.Patch(R"(/api/v1/namespaces/ns/events/(.+))", [this](const httplib::Request& request,
                                                                    httplib::Response& response) {
            std::lock_guard lock(mutex_);
            if (failing_) return fail(response);
            if (expired_) {
              response.status = 404;
              response.set_content(status_body(404, "NotFound", "events not found"),
                                   "application/json");
              return;
            }
            patched_.emplace_back(request.matches[1], json::parse(request.body));
            EXPECT_EQ(request.get_header_value("Content-Type"), "application/merge-patch+json");
            response.set_content("{}", "application/json");
          });
        }) {}

  ClusterAccess access() const { return server_.access(); }
  std::vector<json> created() {
    std::lock_guard lock(mutex_);
    return created_;
  }
  std::vector<std::pair<std::string, json>> patched() {
    std::lock_guard lock(mutex_);
    return patched_;
  }
  void set_failing(bool failing) {
    std::lock_guard lock(mutex_);
    failing_ = failing;
  }
  void set_expired(bool expired) {
    std::lock_guard lock(mutex_);
    expired_ = expired;
  }

 private:
  void fail(httplib::Response& response) {
    response.status = 500;
    response.set_content(status_body(500, "InternalError", "etcd is down"), "application/json");
  }

  std::mutex mutex_;
  std::vector<json> created_;
  std::vector<std::pair<std::string, json>> patched_;
  bool failing_ = false;
  bool expired_ = false;
  FakeApiServer server_;  // last: stopped first
};

EventRecorderOptions options_with_log(std::vector<std::string>& log) {
  EventRecorderOptions options;
  options.component = "fiber-controller";
  options.instance = "controller-0";
  options.log = [&log](LogLevel, std::string_view message) { log.emplace_back(message); };
  return options;
}

TEST(EventRecorder, WritesACompleteEvent) {
  EventServer server;
  ApiClient client(server.access());
  std::vector<std::string> log;
  EventRecorder recorder(client, options_with_log(log));
  ASSERT_TRUE(recorder.warning(kJob, "WorkerLost", "worker pod train-worker-1 was deleted"));
  ASSERT_EQ(server.created().size(), 1u);
  const json event = server.created()[0];
  EXPECT_EQ(event["kind"], "Event");
  EXPECT_TRUE(std::regex_match(event["metadata"]["name"].get<std::string>(),
                               std::regex("train\\.[0-9a-f]+")));
  EXPECT_EQ(event["metadata"]["namespace"], "ns");
  EXPECT_EQ(event["involvedObject"], (json{{"apiVersion", "fibermpi.io/v1alpha1"},
                                           {"kind", "FiberJob"},
                                           {"name", "train"},
                                           {"namespace", "ns"},
                                           {"uid", "uid-7"},
                                           {"resourceVersion", "42"}}));
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["reason"], "WorkerLost");
  EXPECT_EQ(event["message"], "worker pod train-worker-1 was deleted");
  EXPECT_EQ(event["source"]["component"], "fiber-controller");
  EXPECT_EQ(event["source"]["host"], "controller-0");
  EXPECT_EQ(event["reportingComponent"], "fiber-controller");
  EXPECT_EQ(event["reportingInstance"], "controller-0");
  EXPECT_EQ(event["count"], 1);
  EXPECT_EQ(event["firstTimestamp"], event["lastTimestamp"]);
  EXPECT_TRUE(std::regex_match(event["firstTimestamp"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_TRUE(log.empty());
}

TEST(EventRecorder, RepeatsIncrementTheCountOfTheSameEvent) {
  EventServer server;
  ApiClient client(server.access());
  std::vector<std::string> log;
  EventRecorder recorder(client, options_with_log(log));
  ASSERT_TRUE(recorder.normal(kJob, "Scaled", "workers 2 -> 4"));
  ASSERT_TRUE(recorder.normal(kJob, "Scaled", "workers 2 -> 4"));
  ASSERT_TRUE(recorder.normal(kJob, "Scaled", "workers 2 -> 4"));
  ASSERT_TRUE(recorder.normal(kJob, "Scaled", "workers 4 -> 2"));  // another message: new Event
  ASSERT_EQ(server.created().size(), 2u);
  const auto patches = server.patched();
  ASSERT_EQ(patches.size(), 2u);
  EXPECT_EQ(patches[0].first, server.created()[0]["metadata"]["name"]);
  EXPECT_EQ(patches[0].second["count"], 2);
  EXPECT_EQ(patches[1].second["count"], 3);
  EXPECT_TRUE(patches[1].second.contains("lastTimestamp"));

  // An Event the server already dropped (Events expire) is written anew.
  server.set_expired(true);
  ASSERT_TRUE(recorder.normal(kJob, "Scaled", "workers 2 -> 4"));
  EXPECT_EQ(server.created().size(), 3u);
  EXPECT_EQ(server.created()[2]["count"], 1);
}

TEST(EventRecorder, AggregationCanBeTurnedOff) {
  EventServer server;
  ApiClient client(server.access());
  std::vector<std::string> log;
  EventRecorderOptions options = options_with_log(log);
  options.aggregation_window = std::chrono::seconds(0);
  EventRecorder recorder(client, options);
  ASSERT_TRUE(recorder.normal(kJob, "Created", "pod train-launcher"));
  ASSERT_TRUE(recorder.normal(kJob, "Created", "pod train-launcher"));
  EXPECT_EQ(server.created().size(), 2u);
  EXPECT_NE(server.created()[0]["metadata"]["name"], server.created()[1]["metadata"]["name"]);
  EXPECT_TRUE(server.patched().empty());
}

TEST(EventRecorder, FailuresAreLoggedNeverThrown) {
  EventServer server;
  ApiClient client(server.access());
  std::vector<std::string> log;
  EventRecorder recorder(client, options_with_log(log));
  server.set_failing(true);
  EXPECT_FALSE(recorder.normal(kJob, "Created", "pod train-launcher"));
  EXPECT_FALSE(recorder.normal(json{{"kind", "FiberJob"}}, "Created", "no name"));
  EXPECT_FALSE(recorder.normal(json("not an object"), "Created", "not an object"));
  EXPECT_EQ(recorder.failures(), 3u);
  ASSERT_EQ(log.size(), 3u);
  EXPECT_NE(log[0].find("etcd is down"), std::string::npos) << log[0];
  EXPECT_NE(log[1].find("no apiVersion, kind or metadata.name"), std::string::npos) << log[1];
}

}  // namespace
}  // namespace fiber::k8s
