#include "k8s/client/leader_election.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <regex>
#include <thread>

#include "k8s/client/time_format.h"
#include "tests/k8s/client/fake_api_server.h"

namespace fiber::k8s {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::FakeApiServer;
using testing::status_body;

constexpr const char* kLeasePath = "/apis/coordination.k8s.io/v1/namespaces/ns/leases";

// Stores one Lease the way the API server does: 404 before it exists, 409 AlreadyExists on a
// second create, 409 Conflict on a write with a stale resourceVersion; a merge patch applies to
// whatever version is stored.
class LeaseServer {
 public:
  LeaseServer()
      : server_([this](httplib::Server& http) {
          http.Get(std::string(kLeasePath) + "/lock",
                   [this](const httplib::Request& request, httplib::Response& response) {
                     std::lock_guard lock(mutex_);
                     ++gets_by_agent_[request.get_header_value("User-Agent")];
                     changed_.notify_all();
                     if (!lease_)
                       return reply(response, 404, "NotFound", "leases \"lock\" not found");
                     response.set_content(lease_->dump(), "application/json");
                   });
          http.Post(
              kLeasePath, [this](const httplib::Request& request, httplib::Response& response) {
                delay_write();
                std::lock_guard lock(mutex_);
                if (lease_)
                  return reply(response, 409, "AlreadyExists", "leases \"lock\" already exists");
                store(json::parse(request.body), response, 201);
              });
          http.Put(std::string(kLeasePath) + "/lock", [this](const httplib::Request& request,
                                                             httplib::Response& response) {
            delay_write();
            std::lock_guard lock(mutex_);
            const json lease = json::parse(request.body);
            if (!lease_ ||
                lease["metadata"]["resourceVersion"] != (*lease_)["metadata"]["resourceVersion"]) {
              return reply(response, 409, "Conflict",
                           "Operation cannot be fulfilled on leases.coordination.k8s.io \"lock\": "
                           "the object has been modified");
            }
            store(lease, response, 200);
          });
          http.Patch(std::string(kLeasePath) + "/lock",
                     [this](const httplib::Request& request, httplib::Response& response) {
                       std::lock_guard lock(mutex_);
                       if (!lease_)
                         return reply(response, 404, "NotFound", "leases \"lock\" not found");
                       json patched = *lease_;
                       patched.merge_patch(json::parse(request.body));
                       store(patched, response, 200);
                     });
        }) {}

  ClusterAccess access() const { return server_.access(); }

  // Answers every later create and replace `delay` after it arrived (a slow API server or network).
  void set_write_delay(std::chrono::milliseconds delay) { write_delay_ = delay; }

  // Waits until `count` more creates or replaces were stored.
  bool wait_for_writes(int count) {
    std::unique_lock lock(mutex_);
    const int target = version_ + count;
    return changed_.wait_for(lock, 10s, [&] { return version_ >= target; });
  }

  std::optional<json> lease() {
    std::lock_guard lock(mutex_);
    return lease_;
  }

  // Waits until the candidate with User-Agent `agent` has read the lease `count` more times.
  bool wait_for_reads(const std::string& agent, int count) {
    std::unique_lock lock(mutex_);
    const int target = gets_by_agent_[agent] + count;
    return changed_.wait_for(lock, 10s, [&] { return gets_by_agent_[agent] >= target; });
  }

  // Waits until the lease holder is `holder`.
  bool wait_for_holder(const std::string& holder) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 10s, [&] {
      return lease_ && (*lease_)["spec"].value("holderIdentity", std::string()) == holder;
    });
  }

 private:
  void reply(httplib::Response& response, int status, const char* reason, const char* message) {
    response.status = status;
    response.set_content(status_body(status, reason, message), "application/json");
  }

  void delay_write() {
    const std::chrono::milliseconds delay = write_delay_;
    if (delay > 0ms) std::this_thread::sleep_for(delay);  // the slow answer under test
  }

  void store(json lease, httplib::Response& response, int status) {
    lease["metadata"]["resourceVersion"] = std::to_string(++version_);
    lease_ = lease;
    changed_.notify_all();
    response.status = status;
    response.set_content(lease.dump(), "application/json");
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<json> lease_;
  int version_ = 100;
  std::map<std::string, int> gets_by_agent_;
  std::atomic<std::chrono::milliseconds> write_delay_{0ms};
  FakeApiServer server_;  // last: stopped first
};

// A candidate with its own client (told apart by its User-Agent) and a log of its callbacks.
struct Candidate {
  Candidate(LeaseServer& server, const std::string& identity, std::chrono::milliseconds lease,
            std::chrono::milliseconds renew, bool release = true)
      : client(server.access(), options_for(identity)) {
    LeaderElectionConfig config;
    config.identity = identity;
    config.lease_name = "lock";
    config.lease_namespace = "ns";
    config.lease_duration = lease;
    config.renew_deadline = renew;
    config.retry_period = 50ms;
    config.release_on_stop = release;
    config.on_started_leading = [this] { note("started"); };
    config.on_stopped_leading = [this, &server] {
      note("stopped");
      const std::optional<json> lease = server.lease();
      std::lock_guard lock(mutex);
      holder_when_stopped = lease ? lease->at("spec").value("holderIdentity", "") : "no lease";
    };
    config.on_new_leader = [this](const std::string& leader) { note("leader " + leader); };
    elector = std::make_unique<LeaderElector>(client, config);
  }

  static ClientOptions options_for(const std::string& identity) {
    ClientOptions options;
    options.user_agent = identity;
    return options;
  }

  void note(const std::string& line) {
    std::lock_guard lock(mutex);
    heard.push_back(line);
  }

  std::vector<std::string> callbacks() {
    std::lock_guard lock(mutex);
    return heard;
  }

  bool heard_line(const std::string& line) {
    std::lock_guard lock(mutex);
    return std::find(heard.begin(), heard.end(), line) != heard.end();
  }

  ApiClient client;
  std::mutex mutex;
  std::vector<std::string> heard;
  std::string holder_when_stopped;
  std::unique_ptr<LeaderElector> elector;
};

TEST(LeaderElection, OneLeadsAndTheOtherTakesOverAtOnceAfterRelease) {
  LeaseServer server;
  // A long lease: only the release can explain a quick takeover.
  Candidate a(server, "a", 30s, 20s);
  Candidate b(server, "b", 30s, 20s);
  a.elector->start();
  ASSERT_TRUE(a.elector->wait_for_leadership(10s));
  b.elector->start();
  ASSERT_TRUE(server.wait_for_reads("b", 3));
  EXPECT_FALSE(b.elector->is_leader());
  EXPECT_TRUE(a.elector->is_leader());
  EXPECT_EQ(b.elector->leader(), "a");

  const json held = *server.lease();
  EXPECT_EQ(held["spec"]["holderIdentity"], "a");
  EXPECT_EQ(held["spec"]["leaseDurationSeconds"], 30);
  EXPECT_EQ(held["spec"]["leaseTransitions"], 0);
  const std::regex micro_time(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)");
  EXPECT_TRUE(std::regex_match(held["spec"]["acquireTime"].get<std::string>(), micro_time));
  EXPECT_TRUE(std::regex_match(held["spec"]["renewTime"].get<std::string>(), micro_time));

  const auto released_at = std::chrono::steady_clock::now();
  a.elector->stop();
  EXPECT_FALSE(a.elector->is_leader());
  ASSERT_TRUE(b.elector->wait_for_leadership(10s));
  EXPECT_LT(std::chrono::steady_clock::now() - released_at, 10s)
      << "the successor must not wait for the 30 s lease to expire";
  const json taken = *server.lease();
  EXPECT_EQ(taken["spec"]["holderIdentity"], "b");
  EXPECT_EQ(taken["spec"]["leaseTransitions"], 1);
  EXPECT_EQ(taken["spec"]["leaseDurationSeconds"], 30);
  b.elector->stop();
  EXPECT_EQ(server.lease()->at("spec").at("holderIdentity"), "");

  EXPECT_EQ(a.callbacks(), (std::vector<std::string>{"leader a", "started", "stopped"}));
  EXPECT_EQ(a.holder_when_stopped, "a") << "the work must stop before the lease is released";
  const auto heard_by_b = b.callbacks();
  ASSERT_GE(heard_by_b.size(), 3u);
  EXPECT_EQ(heard_by_b[0], "leader a");
  EXPECT_EQ(heard_by_b[1], "leader b");
  EXPECT_EQ(heard_by_b[2], "started");
}

TEST(LeaderElection, ExpiredLeaseIsTakenOverWithoutRelease) {
  LeaseServer server;
  Candidate a(server, "a", 1s, 600ms, /*release=*/false);
  Candidate b(server, "b", 1s, 600ms);
  a.elector->start();
  ASSERT_TRUE(a.elector->wait_for_leadership(10s));
  b.elector->start();
  ASSERT_TRUE(server.wait_for_reads("b", 2));
  EXPECT_FALSE(b.elector->is_leader());
  a.elector->stop();  // gone without a word: b must wait for the lease to run out
  EXPECT_EQ(server.lease()->at("spec").at("holderIdentity"), "a");
  ASSERT_TRUE(b.elector->wait_for_leadership(10s));
  EXPECT_EQ(server.lease()->at("spec").at("leaseTransitions"), 1);
  b.elector->stop();
}

TEST(LeaderElection, LeaderThatCannotRenewStepsDown) {
  LeaseServer server;
  // A lease much longer than the renew deadline, so it does not run out before the end.
  Candidate a(server, "a", 20s, 1s);
  a.elector->start();
  ASSERT_TRUE(a.elector->wait_for_leadership(10s));
  // Someone else grabs the lease behind the leader's back (as after a network partition).
  ClusterAccess access = server.access();
  ApiClient intruder(access);
  // A patch, not a read and a replace: the leader renews every 50 ms, and a renewal between the
  // read and the write would make the write a 409. The leader's own next write meets the conflict.
  intruder.patch(leases_ref("ns"), "lock",
                 {{"spec",
                   {{"holderIdentity", "intruder"},
                    {"renewTime", format_micro_time(std::chrono::system_clock::now())}}}},
                 PatchType::kMerge);
  // Keep the intruder's lease fresh until the old leader has stepped down (after each of its
  // attempts, so it never sees the lease expire).
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!a.heard_line("stopped") && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(server.wait_for_reads("a", 1));
    json current = intruder.get(leases_ref("ns"), "lock");
    current["spec"]["renewTime"] = format_micro_time(std::chrono::system_clock::now());
    intruder.replace(leases_ref("ns"), current);
  }
  EXPECT_TRUE(a.heard_line("stopped"));
  EXPECT_FALSE(a.elector->is_leader());
  EXPECT_TRUE(a.heard_line("leader intruder"));
  a.elector->stop();
  EXPECT_EQ(server.lease()->at("spec").at("holderIdentity"), "intruder")
      << "a candidate that does not lead must not release someone else's lease";
}

TEST(LeaderElection, ARenewalAnsweredAfterTheRenewDeadlineDoesNotMakeALeader) {
  LeaseServer server;
  // Every write is answered 1.2 s after it arrived, more than the renew deadline of 1 s: the lease
  // may have been stored long ago, so the candidate must not lead on such an answer.
  server.set_write_delay(1200ms);
  Candidate a(server, "a", 3s, 1s);
  a.elector->start();
  ASSERT_TRUE(server.wait_for_writes(2));
  EXPECT_FALSE(a.elector->is_leader());
  EXPECT_FALSE(a.heard_line("started"));
  // Prompt answers again: it leads.
  server.set_write_delay(0ms);
  EXPECT_TRUE(a.elector->wait_for_leadership(10s));
  a.elector->stop();
}

TEST(LeaderElection, RefusesABadConfiguration) {
  LeaseServer server;
  ApiClient client(server.access());
  LeaderElectionConfig config;
  config.lease_name = "lock";
  config.lease_namespace = "ns";
  EXPECT_THROW(LeaderElector(client, config), std::invalid_argument);  // no identity
  config.identity = "a";
  config.renew_deadline = config.lease_duration;
  EXPECT_THROW(LeaderElector(client, config), std::invalid_argument);
}

}  // namespace
}  // namespace fiber::k8s
