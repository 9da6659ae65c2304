#include "k8s/client/api_client.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <future>

#include "tests/k8s/client/fake_api_server.h"
#include "tests/k8s/client/temp_folder.h"

namespace fiber::k8s {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::event_line;
using testing::FakeApiServer;
using testing::LineChannel;
using testing::status_body;

// What the server saw of the last request.
struct Seen {
  std::string method, path, body, content_type, authorization, query;
};

json pod(const std::string& name, const std::string& rv) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}}}};
}

class ApiClientTest : public ::testing::Test {
 protected:
  // Records every request and answers it with `answer`.
  void serve(std::function<void(const httplib::Request&, httplib::Response&)> answer) {
    answer_ = std::move(answer);
    server_ = std::make_unique<FakeApiServer>([this](httplib::Server& http) {
      auto handler = [this](const httplib::Request& request, httplib::Response& response) {
        {
          std::lock_guard lock(mutex_);
          std::string query;
          for (const auto& [name, value] : request.params) query += name + "=" + value + ";";
          seen_.push_back(Seen{request.method, request.path, request.body,
                               request.get_header_value("Content-Type"),
                               request.get_header_value("Authorization"), query});
        }
        answer_(request, response);
      };
      for (const char* pattern : {".*"}) {
        http.Get(pattern, handler);
        http.Post(pattern, handler);
        http.Put(pattern, handler);
        http.Patch(pattern, handler);
        http.Delete(pattern, handler);
      }
    });
  }

  Seen last() {
    std::lock_guard lock(mutex_);
    return seen_.back();
  }

  std::vector<Seen> all() {
    std::lock_guard lock(mutex_);
    return seen_;
  }

  std::mutex mutex_;
  std::vector<Seen> seen_;
  std::function<void(const httplib::Request&, httplib::Response&)> answer_;
  std::unique_ptr<FakeApiServer> server_;
};

TEST(WatchLine, IsAnEventNothingOrAnErrorThatSaysWhy) {
  EXPECT_FALSE(parse_watch_event(" \t\r", "/api/v1/pods").has_value());
  const auto event = parse_watch_event(
      R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p-0"}}})", "/api/v1/pods");
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->type, "ADDED");
  EXPECT_EQ(event->object["metadata"]["name"], "p-0");
  try {
    parse_watch_event(R"({"object":{}})", "/api/v1/pods");
    ADD_FAILURE() << "an event without a type was taken";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("watch /api/v1/pods: malformed event"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_watch_event("{not json", "/api/v1/pods"), TransportError);
  try {
    parse_watch_event(
        R"({"type":"ERROR","object":{"kind":"Status","reason":"Expired","code":410}})",
        "/api/v1/pods");
    ADD_FAILURE() << "an ERROR event was taken";
  } catch (const ApiError& e) {
    EXPECT_TRUE(e.is_gone());
    EXPECT_EQ(e.reason(), "Expired");
  }
}

TEST_F(ApiClientTest, PathsOfCoreAndNamedGroups) {
  EXPECT_EQ(pods_ref("ns").object_path("p", "log"), "/api/v1/namespaces/ns/pods/p/log");
  EXPECT_EQ(pods_ref().collection_path(), "/api/v1/pods");
  EXPECT_EQ(fiberjobs_ref("ns").object_path("j", "status"),
            "/apis/fibermpi.io/v1alpha1/namespaces/ns/fiberjobs/j/status");
  EXPECT_EQ(leases_ref("kube-system").api_version(), "coordination.k8s.io/v1");
  EXPECT_EQ(pods_ref().api_version(), "v1");
  const ResourceRef nodes{"", "v1", "nodes", ""};
  EXPECT_EQ(nodes.object_path("n1"), "/api/v1/nodes/n1");
  EXPECT_THROW(nodes.object_path(""), std::invalid_argument);
}

TEST_F(ApiClientTest, ACreateGivesTheServersWarningsAndSendsItsQuery) {
  serve([](const httplib::Request& request, httplib::Response& response) {
    response.status = 201;
    response.set_header("Warning", R"(299 - "would violate PodSecurity \"restricted:latest\"")");
    response.set_header("Warning", R"(299 - "a back\\slash")");
    response.set_content(request.body, "application/json");
  });
  ApiClient client(server_->access());
  const Response created =
      client.create_object(pods_ref("ns"), pod("p", ""), {{"fieldValidation", "Strict"}});
  EXPECT_EQ(created.status, 201);
  EXPECT_EQ(created.json["metadata"]["name"], "p");
  EXPECT_EQ(created.warnings,
            (std::vector<std::string>{R"(would violate PodSecurity "restricted:latest")",
                                      R"(a back\slash)"}));
  EXPECT_EQ(last().method, "POST");
  EXPECT_EQ(last().query, "fieldValidation=Strict;");
}

TEST_F(ApiClientTest, TypedHelpersSendTheRightRequests) {
  serve([](const httplib::Request& request, httplib::Response& response) {
    if (request.path.ends_with("/log")) {
      response.set_content("line one\nline two\n", "text/plain");
    } else if (request.method == "POST") {
      response.status = 201;
      response.set_content(request.body, "application/json");
    } else if (request.method == "DELETE") {
      response.set_content(pod("p", "9").dump(), "application/json");
    } else {
      response.set_content(pod("p", "7").dump(), "application/json");
    }
  });
  ClusterAccess access = server_->access();
  access.token = "tok";
  ApiClient client(access);

  EXPECT_EQ(client.get(pods_ref("ns"), "p")["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(last().path, "/api/v1/namespaces/ns/pods/p");
  EXPECT_EQ(last().authorization, "Bearer tok");

  const json created = client.create(fiberjobs_ref("ns"), pod("j", ""));
  EXPECT_EQ(created["metadata"]["name"], "j");
  EXPECT_EQ(last().method, "POST");
  EXPECT_EQ(last().path, "/apis/fibermpi.io/v1alpha1/namespaces/ns/fiberjobs");
  EXPECT_EQ(last().content_type, "application/json");

  client.replace(pods_ref("ns"), pod("p", "7"));
  EXPECT_EQ(last().method, "PUT");
  EXPECT_EQ(last().path, "/api/v1/namespaces/ns/pods/p");
  EXPECT_EQ(json::parse(last().body)["metadata"]["resourceVersion"], "7");
  EXPECT_THROW(client.replace(pods_ref("ns"), pod("p", "")), std::invalid_argument);

  client.replace_status(fiberjobs_ref("ns"), pod("j", "3"));
  EXPECT_EQ(last().path, "/apis/fibermpi.io/v1alpha1/namespaces/ns/fiberjobs/j/status");

  client.patch(fiberjobs_ref("ns"), "j", {{"spec", {{"workers", {{"replicas", 3}}}}}});
  EXPECT_EQ(last().method, "PATCH");
  EXPECT_EQ(last().content_type, "application/merge-patch+json");
  EXPECT_EQ(json::parse(last().body)["spec"]["workers"]["replicas"], 3);

  client.patch(fiberjobs_ref("ns"), "j", json::array({{{"op", "remove"}, {"path", "/x"}}}),
               PatchType::kJson, "status");
  EXPECT_EQ(last().content_type, "application/json-patch+json");
  EXPECT_EQ(last().path, "/apis/fibermpi.io/v1alpha1/namespaces/ns/fiberjobs/j/status");

  DeleteOptions options;
  options.propagation_policy = "Foreground";
  options.grace_period_seconds = 0;
  options.precondition_uid = "uid-1";
  client.remove(pods_ref("ns"), "p", options);
  EXPECT_EQ(last().method, "DELETE");
  const json delete_body = json::parse(last().body);
  EXPECT_EQ(delete_body["kind"], "DeleteOptions");
  EXPECT_EQ(delete_body["propagationPolicy"], "Foreground");
  EXPECT_EQ(delete_body["gracePeriodSeconds"], 0);
  EXPECT_EQ(delete_body["preconditions"]["uid"], "uid-1");
  EXPECT_FALSE(delete_body["preconditions"].contains("resourceVersion"));

  EXPECT_EQ(client.read_log("ns", "p", "main"), "line one\nline two\n");
  EXPECT_EQ(last().path, "/api/v1/namespaces/ns/pods/p/log");
  EXPECT_EQ(last().query, "container=main;");

  const RequestStats stats = client.stats();
  EXPECT_EQ(stats.at({"GET", 200}), 2u);
  EXPECT_EQ(stats.at({"POST", 201}), 1u);
  EXPECT_EQ(stats.at({"PATCH", 200}), 2u);
}

TEST_F(ApiClientTest, ListFollowsContinueTokensAndEncodesSelectors) {
  serve([](const httplib::Request& request, httplib::Response& response) {
    const std::string token = request.get_param_value("continue");
    json page = {{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", json::array()}};
    if (token.empty()) {
      // Like the API server: items without kind and apiVersion.
      page["items"] = {{{"metadata", {{"name", "a"}}}}, pod("b", "2")};
      page["metadata"] = {{"resourceVersion", "40"}, {"continue", "page two"}};
    } else {
      page["items"] = {pod("c", "3")};
      page["metadata"] = {{"resourceVersion", "41"}};
    }
    response.set_content(page.dump(), "application/json");
  });
  ApiClient client(server_->access());
  ListOptions options;
  options.label_selector = "fibermpi.io/job-name=a b,fibermpi.io/role in (worker)";
  options.page_size = 2;
  const ListResult result = client.list(pods_ref("ns"), options);
  ASSERT_EQ(result.items.size(), 3u);
  EXPECT_EQ(result.items[2]["metadata"]["name"], "c");
  EXPECT_EQ(result.items[0]["kind"], "Pod");
  EXPECT_EQ(result.items[0]["apiVersion"], "v1");
  EXPECT_EQ(result.resource_version, "41");
  const auto requests = all();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].query,
            "labelSelector=fibermpi.io/job-name=a b,fibermpi.io/role in (worker);limit=2;");
  EXPECT_EQ(requests[1].query,
            "continue=page two;labelSelector=fibermpi.io/job-name=a b,fibermpi.io/role in "
            "(worker);limit=2;");
}

TEST_F(ApiClientTest, StatusErrorsBecomeApiErrors) {
  serve([](const httplib::Request& request, httplib::Response& response) {
    const std::string name = request.path.substr(request.path.rfind('/') + 1);
    if (name == "missing") {
      response.status = 404;
      response.set_content(status_body(404, "NotFound", "pods \"missing\" not found"),
                           "application/json");
    } else if (name == "stale") {
      response.status = 409;
      response.set_content(
          status_body(409, "Conflict",
                      "Operation cannot be fulfilled on pods \"stale\": the object has been "
                      "modified; please apply your changes to the latest version and try again"),
          "application/json");
    } else if (name == "invalid") {
      response.status = 422;
      response.set_content(
          status_body(422, "Invalid", "FiberJob.fibermpi.io \"invalid\" is invalid"),
          "application/json");
    } else if (name == "old") {
      response.status = 410;
      response.set_content(status_body(410, "Expired", "too old resource version: 1 (50)"),
                           "application/json");
    } else {
      response.status = 502;
      response.set_content("<html>bad gateway</html>", "text/html");
    }
  });
  ApiClient client(server_->access());
  try {
    client.get(pods_ref("ns"), "missing");
    FAIL() << "no ApiError";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code(), 404);
    EXPECT_TRUE(error.is_not_found());
    EXPECT_EQ(error.reason(), "NotFound");
    EXPECT_EQ(error.message(), "pods \"missing\" not found");
    EXPECT_EQ(error.status()["kind"], "Status");
    EXPECT_NE(std::string(error.what()).find("GET /api/v1/namespaces/ns/pods/missing"),
              std::string::npos);
  }
  try {
    client.replace(pods_ref("ns"), pod("stale", "1"));
    FAIL() << "no ApiError";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.is_conflict());
    EXPECT_FALSE(error.is_already_exists());
    EXPECT_NE(error.message().find("the object has been modified"), std::string::npos);
  }
  try {
    client.get(fiberjobs_ref("ns"), "invalid");
    FAIL() << "no ApiError";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.is_invalid());
  }
  try {
    client.get(pods_ref("ns"), "old");
    FAIL() << "no ApiError";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.is_gone());
    EXPECT_EQ(error.reason(), "Expired");
  }
  try {
    client.get(pods_ref("ns"), "proxy");
    FAIL() << "no ApiError";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code(), 502);
    EXPECT_TRUE(error.is_retryable());
    EXPECT_EQ(error.reason(), "");
    EXPECT_EQ(error.message(), "<html>bad gateway</html>");
  }
  EXPECT_EQ(client.stats().at({"GET", 404}), 1u);
}

TEST_F(ApiClientTest, ConnectionsAreKeptAlive) {
  std::vector<int> ports;
  serve([&](const httplib::Request& request, httplib::Response& response) {
    ports.push_back(request.remote_port);
    response.set_content("{}", "application/json");
  });
  ApiClient client(server_->access());
  for (int i = 0; i < 3; ++i) client.get(pods_ref("ns"), "p");
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_EQ(ports[0], ports[1]);
  EXPECT_EQ(ports[1], ports[2]);
}

TEST_F(ApiClientTest, RequestIsCancelledFromAnotherThread) {
  std::promise<void> arrived;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  // The handler holds its own copy of the shared state it waits on: it wakes after
  // release.set_value() and may still read that state while this test is returning.
  serve([&arrived, released](const httplib::Request&, httplib::Response& response) {
    arrived.set_value();
    released.wait();
    response.set_content("{}", "application/json");
  });
  ApiClient client(server_->access());
  std::stop_source stop;
  auto listing = std::async(std::launch::async,
                            [&] { return client.list(pods_ref("ns"), {}, stop.get_token()); });
  ASSERT_EQ(arrived.get_future().wait_for(10s), std::future_status::ready);
  stop.request_stop();
  ASSERT_EQ(listing.wait_for(10s), std::future_status::ready);
  release.set_value();
  try {
    listing.get();
    FAIL() << "no TransportError";
  } catch (const TransportError& error) {
    EXPECT_NE(std::string(error.what()).find("cancelled"), std::string::npos) << error.what();
  }
  server_.reset();  // its handler thread is done before `arrived` goes
}

TEST_F(ApiClientTest, UnreachableServerIsATransportError) {
  int port;
  {
    serve([](const httplib::Request&, httplib::Response&) {});
    port = std::stoi(server_->url().substr(server_->url().rfind(':') + 1));
    server_.reset();
  }
  ClusterAccess access;
  access.server = "http://127.0.0.1:" + std::to_string(port);
  ApiClient client(access);
  EXPECT_THROW(client.get(pods_ref("ns"), "p"), TransportError);
  EXPECT_EQ(client.stats().at({"GET", 0}), 1u);
}

TEST_F(ApiClientTest, TokenFileIsReadAgainWhenItChanges) {
  serve([](const httplib::Request&, httplib::Response& response) {
    response.set_content("{}", "application/json");
  });
  const testing::TempFolder folder("api_client_test");
  const std::filesystem::path token = folder.path() / "token";
  std::ofstream(token) << "first\n";
  ClusterAccess access = server_->access();
  access.token = "ignored when a file is set";
  access.token_file = token;
  ApiClient client(access);
  client.get(pods_ref("ns"), "p");
  EXPECT_EQ(last().authorization, "Bearer first");
  // A rotated token: new content and a new modification time (set explicitly, as two writes
  // within the file system's time resolution would look unchanged).
  std::ofstream(token) << "second\n";
  std::filesystem::last_write_time(token, std::filesystem::last_write_time(token) + 2s);
  client.get(pods_ref("ns"), "p");
  EXPECT_EQ(last().authorization, "Bearer second");
}

TEST_F(ApiClientTest, WatchStreamsEventsAcrossChunkBoundaries) {
  auto channel = std::make_shared<LineChannel>();
  serve([&](const httplib::Request&, httplib::Response& response) {
    server_->stream(response, channel);
  });
  const std::string added = event_line("ADDED", pod("a", "11"));
  const std::string modified = event_line("MODIFIED", pod("a", "12"));
  channel->push(added.substr(0, 10));
  channel->push(added.substr(10) + modified.substr(0, modified.size() - 1));
  channel->push(
      "\n" + event_line("BOOKMARK", {{"kind", "Pod"}, {"metadata", {{"resourceVersion", "15"}}}}));
  // The last event of a stream may come without its newline.
  const std::string deleted = event_line("DELETED", pod("a", "16"));
  channel->push(deleted.substr(0, deleted.size() - 1));
  channel->close();

  ApiClient client(server_->access());
  std::vector<std::string> seen;
  WatchOptions options;
  options.timeout_seconds = 30;
  options.label_selector = "app=x";
  const WatchEnd end = client.watch(pods_ref("ns"), "10", options, [&](const WatchEvent& event) {
    seen.push_back(event.type + " " +
                   event.object["metadata"]["resourceVersion"].get<std::string>());
    return true;
  });
  EXPECT_EQ(end, WatchEnd::kServerClosed);
  EXPECT_EQ(seen,
            (std::vector<std::string>{"ADDED 11", "MODIFIED 12", "BOOKMARK 15", "DELETED 16"}));
  EXPECT_EQ(last().query,
            "allowWatchBookmarks=true;labelSelector=app=x;resourceVersion=10;timeoutSeconds=30;"
            "watch=true;");
  EXPECT_EQ(client.stats().at({"WATCH", 200}), 1u);
}

TEST_F(ApiClientTest, WatchErrorEventThrowsGone) {
  auto channel = std::make_shared<LineChannel>();
  serve([&](const httplib::Request&, httplib::Response& response) {
    server_->stream(response, channel);
  });
  channel->push(event_line("ADDED", pod("a", "11")));
  channel->push(event_line(
      "ERROR", json::parse(status_body(410, "Expired", "too old resource version: 5 (11)"))));
  ApiClient client(server_->access());
  int events = 0;
  try {
    client.watch(pods_ref("ns"), "5", {}, [&](const WatchEvent&) {
      ++events;
      return true;
    });
    FAIL() << "no ApiError";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.is_gone());
    EXPECT_EQ(error.message(), "too old resource version: 5 (11)");
  }
  EXPECT_EQ(events, 1);
  channel->close();
}

TEST_F(ApiClientTest, WatchStopsWhenTheCallbackSaysSo) {
  auto channel = std::make_shared<LineChannel>();
  serve([&](const httplib::Request&, httplib::Response& response) {
    server_->stream(response, channel);
  });
  channel->push(event_line("ADDED", pod("a", "1")) + event_line("ADDED", pod("b", "2")));
  ApiClient client(server_->access());
  int events = 0;
  const WatchEnd end = client.watch(pods_ref("ns"), "", {}, [&](const WatchEvent&) {
    ++events;
    return false;
  });
  EXPECT_EQ(end, WatchEnd::kStoppedByCallback);
  EXPECT_EQ(events, 1);
  channel->close();
}

TEST_F(ApiClientTest, WatchIsCancelledFromAnotherThread) {
  auto channel = std::make_shared<LineChannel>();
  serve([&](const httplib::Request&, httplib::Response& response) {
    server_->stream(response, channel);
  });
  channel->push(event_line("ADDED", pod("a", "1")));
  ApiClient client(server_->access());
  std::stop_source stop;
  std::promise<void> first_event;
  auto watching = std::async(std::launch::async, [&] {
    bool first = true;
    return client.watch(
        pods_ref("ns"), "", {},
        [&](const WatchEvent&) {
          if (first) first_event.set_value();
          first = false;
          return true;
        },
        stop.get_token());
  });
  ASSERT_EQ(first_event.get_future().wait_for(10s), std::future_status::ready);
  const auto cancelled_at = std::chrono::steady_clock::now();
  stop.request_stop();
  ASSERT_EQ(watching.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(watching.get(), WatchEnd::kCancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at, 900ms)
      << "a cancelled watch must not wait for libcurl's once-a-second progress tick";
  channel->close();
}

TEST_F(ApiClientTest, SilentWatchIsABrokenConnectionAfterTheIdleTimeout) {
  auto channel = std::make_shared<LineChannel>();  // never sends anything
  serve([&](const httplib::Request&, httplib::Response& response) {
    server_->stream(response, channel);
  });
  ClientOptions options;
  options.watch_idle_timeout = 1s;
  ApiClient client(server_->access(), options);
  const auto start = std::chrono::steady_clock::now();
  try {
    client.watch(pods_ref("ns"), "", {}, [](const WatchEvent&) { return true; });
    FAIL() << "a silent watch did not fail";
  } catch (const TransportError& error) {
    EXPECT_TRUE(error.is_timeout()) << error.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  channel->close();
}

TEST_F(ApiClientTest, WatchRefusedWithStatusThrows) {
  serve([](const httplib::Request&, httplib::Response& response) {
    response.status = 403;
    response.set_content(status_body(403, "Forbidden", "pods is forbidden: User cannot watch"),
                         "application/json");
  });
  ApiClient client(server_->access());
  try {
    client.watch(pods_ref("ns"), "", {}, [](const WatchEvent&) { return true; });
    FAIL() << "no ApiError";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.is_forbidden());
    EXPECT_EQ(error.reason(), "Forbidden");
  }
}

}  // namespace
}  // namespace fiber::k8s
