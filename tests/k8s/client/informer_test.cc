#include "k8s/client/informer.h"

#include <gtest/gtest.h>

#include <deque>

#include "tests/k8s/client/fake_api_server.h"

namespace fiber::k8s {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::event_line;
using testing::FakeApiServer;
using testing::LineChannel;
using testing::status_body;

json pod(const std::string& name, const std::string& rv, const std::string& job) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"resourceVersion", rv},
            {"labels", {{"fibermpi.io/job-name", job}}}}}};
}

std::string rv_of(const json& object) {
  return object["metadata"]["resourceVersion"].get<std::string>();
}

std::string name_of(const json& object) { return object["metadata"]["name"].get<std::string>(); }

// An API server whose list answers and watch streams are queued by the test, in order.
class ScriptedServer {
 public:
  ScriptedServer()
      : server_([this](httplib::Server& http) {
          http.Get("/api/v1/namespaces/ns/pods",
                   [this](const httplib::Request& request, httplib::Response& response) {
                     answer(request, response);
                   });
        }) {}

  // Queues the answer of the next list: a PodList, or a Status error when `status` is not 200.
  void queue_list(std::vector<json> items, const std::string& rv, int status = 200) {
    std::lock_guard lock(mutex_);
    if (status == 200) {
      lists_.push_back({status, json{{"kind", "PodList"},
                                     {"metadata", {{"resourceVersion", rv}}},
                                     {"items", std::move(items)}}
                                    .dump()});
    } else {
      lists_.push_back({status, status_body(status, "InternalError", "scripted failure")});
    }
  }

  // Queues the stream of the next watch; a watch with nothing queued stays open and silent.
  std::shared_ptr<LineChannel> queue_watch() {
    std::lock_guard lock(mutex_);
    watches_.push_back(std::make_shared<LineChannel>());
    return watches_.back();
  }

  // Queues a Status error answer to the next watch.
  void queue_watch_error(int status) {
    std::lock_guard lock(mutex_);
    watch_errors_.push_back(status);
  }

  std::vector<std::string> watched_versions() {
    std::lock_guard lock(mutex_);
    return watched_versions_;
  }

  bool wait_for_watches(std::size_t count, std::chrono::milliseconds timeout = 10s) {
    return testing::wait_until(
        mutex_, changed_, [&] { return watched_versions_.size() >= count; }, timeout);
  }

  ClusterAccess access() const { return server_.access(); }

  // The timeoutSeconds every watch must ask for (the informer's defaults unless told).
  void expect_watch_timeouts(int min_seconds, int max_seconds) {
    std::lock_guard lock(mutex_);
    expected_min_timeout_ = min_seconds;
    expected_max_timeout_ = max_seconds;
  }

 private:
  void answer(const httplib::Request& request, httplib::Response& response) {
    std::unique_lock lock(mutex_);
    if (request.get_param_value("watch") != "true") {
      if (lists_.empty()) {
        response.status = 500;
        response.set_content(status_body(500, "InternalError", "no list scripted"),
                             "application/json");
        return;
      }
      const auto [status, body] = lists_.front();
      lists_.pop_front();
      response.status = status;
      response.set_content(body, "application/json");
      return;
    }
    EXPECT_EQ(request.get_param_value("allowWatchBookmarks"), "true");
    const int timeout = std::stoi(request.get_param_value("timeoutSeconds"));
    EXPECT_GE(timeout, expected_min_timeout_);
    EXPECT_LE(timeout, expected_max_timeout_);
    watched_versions_.push_back(request.get_param_value("resourceVersion"));
    changed_.notify_all();
    if (!watch_errors_.empty()) {
      response.status = watch_errors_.front();
      watch_errors_.pop_front();
      response.set_content(status_body(response.status, "InternalError", "scripted failure"),
                           "application/json");
      return;
    }
    std::shared_ptr<LineChannel> channel = std::make_shared<LineChannel>();
    if (!watches_.empty()) {
      channel = watches_.front();
      watches_.pop_front();
    }
    lock.unlock();
    server_.stream(response, channel);
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::pair<int, std::string>> lists_;
  std::deque<std::shared_ptr<LineChannel>> watches_;
  std::deque<int> watch_errors_;
  std::vector<std::string> watched_versions_;
  int expected_min_timeout_ = 60;
  int expected_max_timeout_ = 120;
  FakeApiServer server_;  // last: stopped first, while the script above still exists
};

// Collects what the handlers heard, as "add a 1", "update a 1->12", "delete b 2".
class Heard {
 public:
  void attach(Informer& informer) {
    informer.on_add(
        [this](const json& object) { note("add " + name_of(object) + " " + rv_of(object)); });
    informer.on_update([this](const json& old_object, const json& new_object) {
      note("update " + name_of(new_object) + " " + rv_of(old_object) + "->" + rv_of(new_object));
    });
    informer.on_delete(
        [this](const json& object) { note("delete " + name_of(object) + " " + rv_of(object)); });
  }

  bool wait_for(std::size_t count) {
    return testing::wait_until(mutex_, changed_, [&] { return lines_.size() >= count; });
  }

  std::vector<std::string> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  void note(std::string line) {
    std::lock_guard lock(mutex_);
    lines_.push_back(std::move(line));
    changed_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;
};

InformerOptions pod_informer_options() {
  InformerOptions options;
  options.ref = pods_ref("ns");
  options.index_label = "fibermpi.io/job-name";
  options.error_backoff.initial = 10ms;
  options.error_backoff.max = 50ms;
  return options;
}

TEST(Informer, ListsWatchesAndRelistsAfterGone) {
  ScriptedServer server;
  server.queue_list({pod("a", "1", "j1"), pod("b", "2", "j1")}, "10");
  auto first_watch = server.queue_watch();
  first_watch->push(event_line("ADDED", pod("c", "11", "j2")));
  first_watch->push(event_line("MODIFIED", pod("a", "12", "j1")));
  first_watch->push(
      event_line("BOOKMARK", {{"kind", "Pod"}, {"metadata", {{"resourceVersion", "15"}}}}));
  first_watch->push(event_line(
      "ERROR", json::parse(status_body(410, "Expired", "too old resource version: 15 (30)"))));
  // While the informer was away, b was deleted and c changed.
  server.queue_list({pod("a", "12", "j1"), pod("c", "16", "j2")}, "20");
  auto second_watch = server.queue_watch();

  ApiClient client(server.access());
  Informer informer(client, pod_informer_options());
  Heard heard;
  heard.attach(informer);
  EXPECT_FALSE(informer.has_synced());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(10s));

  ASSERT_TRUE(heard.wait_for(6));
  EXPECT_EQ(heard.lines(),
            (std::vector<std::string>{"add a 1", "add b 2", "add c 11", "update a 1->12",
                                      "update c 11->16", "delete b 2"}));
  ASSERT_TRUE(server.wait_for_watches(2));
  EXPECT_EQ(server.watched_versions(), (std::vector<std::string>{"10", "20"}));
  EXPECT_EQ(informer.list_count(), 2u);

  second_watch->push(event_line("ADDED", pod("e", "21", "j1")));
  ASSERT_TRUE(heard.wait_for(7));
  EXPECT_EQ(heard.lines().back(), "add e 21");
  EXPECT_EQ(informer.resource_version(), "21");

  ASSERT_TRUE(informer.get("ns", "c").has_value());
  EXPECT_EQ(rv_of(*informer.get("ns", "c")), "16");
  EXPECT_FALSE(informer.get("ns", "b").has_value());
  EXPECT_EQ(informer.list().size(), 3u);
  std::vector<std::string> job1;
  for (const json& object : informer.by_label("j1")) job1.push_back(name_of(object));
  EXPECT_EQ(job1, (std::vector<std::string>{"a", "e"}));
  EXPECT_EQ(object_key(pod("a", "12", "j1")), "ns/a");
  EXPECT_EQ(informer.by_label("j2").size(), 1u);
  EXPECT_EQ(informer.by_label("ns", "j2").size(), 1u);
  EXPECT_TRUE(informer.by_label("other-ns", "j2").empty());
  EXPECT_TRUE(informer.by_label("none").empty());

  const auto stopping = std::chrono::steady_clock::now();
  informer.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, 2s) << "stop() must cancel the watch";
  second_watch->close();
}

TEST(Informer, ListsOneNamespaceAlone) {
  // Namespaces whose names begin alike, and a cluster-scoped object: none of them leaks in.
  const auto in = [](const std::string& ns, const std::string& name) {
    json object = pod(name, "1", "j");
    if (ns.empty()) {
      object["metadata"].erase("namespace");
    } else {
      object["metadata"]["namespace"] = ns;
    }
    return object;
  };
  ScriptedServer server;
  server.queue_list(
      {in("ns", "b"), in("ns-2", "a"), in("n", "s"), in("", "ns"), in("ns", "a"), in("nsx", "c")},
      "10");
  auto watch = server.queue_watch();
  ApiClient client(server.access());
  Informer informer(client, pod_informer_options());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(10s));
  std::vector<std::string> names;
  for (const json& object : informer.list("ns")) names.push_back(name_of(object));
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(informer.list("ns-2").size(), 1u);
  EXPECT_TRUE(informer.list("other").empty());
  EXPECT_EQ(informer.list().size(), 6u);
  informer.stop();
  watch->close();
}

TEST(Informer, BookmarksAndDeletesMoveTheResourceVersion) {
  ScriptedServer server;
  server.queue_list({pod("a", "1", "j1")}, "5");
  auto watch = server.queue_watch();
  ApiClient client(server.access());
  Informer informer(client, pod_informer_options());
  Heard heard;
  heard.attach(informer);
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(10s));
  EXPECT_EQ(informer.resource_version(), "5");
  watch->push(event_line("BOOKMARK", {{"kind", "Pod"}, {"metadata", {{"resourceVersion", "8"}}}}));
  watch->push(event_line("DELETED", pod("a", "9", "j1")));
  ASSERT_TRUE(heard.wait_for(2));
  EXPECT_EQ(heard.lines().back(), "delete a 9");
  EXPECT_EQ(informer.resource_version(), "9");
  EXPECT_TRUE(informer.list().empty());
  EXPECT_TRUE(informer.by_label("j1").empty());
  informer.stop();
  watch->close();
}

TEST(Informer, OtherWatchErrorsRewatchFromTheSameVersionWithoutRelisting) {
  ScriptedServer server;
  server.queue_list({pod("a", "1", "j1")}, "7");
  server.queue_watch_error(500);
  server.queue_watch_error(429);
  auto watch = server.queue_watch();
  ApiClient client(server.access());
  Informer informer(client, pod_informer_options());
  informer.start();
  ASSERT_TRUE(server.wait_for_watches(3));
  EXPECT_EQ(server.watched_versions(), (std::vector<std::string>{"7", "7", "7"}));
  EXPECT_EQ(informer.list_count(), 1u);
  informer.stop();
  watch->close();
}

TEST(Informer, AServerThatKeepsAnsweringGoneGetsBackoff) {
  ScriptedServer server;
  server.queue_list({pod("a", "1", "j1")}, "7");
  server.queue_watch_error(410);
  server.queue_list({pod("a", "1", "j1")}, "8");
  server.queue_watch_error(410);
  server.queue_list({pod("a", "1", "j1")}, "9");
  ApiClient client(server.access());
  InformerOptions options = pod_informer_options();
  options.error_backoff.initial = 60s;
  options.error_backoff.max = 60s;
  Informer informer(client, options);
  informer.start();
  ASSERT_TRUE(server.wait_for_watches(2));
  EXPECT_EQ(server.watched_versions(), (std::vector<std::string>{"7", "8"}))
      << "the first 410 relists at once";
  EXPECT_FALSE(server.wait_for_watches(3, 300ms)) << "the second 410 in a row waits";
  EXPECT_EQ(informer.list_count(), 2u);
  informer.stop();
}

TEST(Informer, StopInterruptsTheBackoffOfAFailingList) {
  ScriptedServer server;
  server.queue_list({}, "", 500);
  ApiClient client(server.access());
  InformerOptions options = pod_informer_options();
  options.error_backoff.initial = 60s;
  options.error_backoff.max = 60s;
  std::vector<std::string> warnings;
  std::mutex warnings_mutex;
  options.log = [&](LogLevel, std::string_view message) {
    std::lock_guard lock(warnings_mutex);
    warnings.emplace_back(message);
  };
  Informer informer(client, options);
  informer.start();
  EXPECT_FALSE(informer.wait_for_sync(300ms));
  const auto stopping = std::chrono::steady_clock::now();
  informer.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, 2s);
  std::lock_guard lock(warnings_mutex);
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.front().find("scripted failure"), std::string::npos) << warnings.front();
}

TEST(Informer, AWatchThatGoesSilentAndNeverEndsIsGivenUpAndResumed) {
  // A half-open connection: the server ignores timeoutSeconds and sends nothing. The client gives
  // the watch its timeoutSeconds plus the request timeout, then watches again from the same
  // version (nothing was missed that a relist would need).
  ScriptedServer server;
  server.expect_watch_timeouts(1, 1);
  server.queue_list({pod("a", "1", "j")}, "5");
  ClientOptions client_options;
  client_options.request_timeout = 1s;
  ApiClient client(server.access(), client_options);
  InformerOptions options = pod_informer_options();
  options.min_watch_timeout = 1s;
  options.max_watch_timeout = 1s;
  Informer informer(client, options);
  informer.start();
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(server.wait_for_watches(2, 10s));
  const auto noticed = std::chrono::steady_clock::now() - started;
  EXPECT_GE(noticed, 1900ms);  // not before timeoutSeconds + the request timeout
  EXPECT_LT(noticed, 6s);
  EXPECT_EQ(server.watched_versions(), (std::vector<std::string>{"5", "5"}));
  informer.stop();
}

TEST(Informer, StartTwiceIsALogicError) {
  ScriptedServer server;
  server.queue_list({}, "1");
  ApiClient client(server.access());
  Informer informer(client, pod_informer_options());
  informer.start();
  EXPECT_THROW(informer.start(), std::logic_error);
  informer.stop();
  informer.stop();
}

}  // namespace
}  // namespace fiber::k8s
