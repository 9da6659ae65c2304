// What the controller expects its informers to show next for each job: the objects it created and
// the pods it deleted. Until the cache has caught up, the job is not reconciled, so a stale cache
// never makes the controller create a pod twice or count its own deletion as a lost worker.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace fiber::k8s::controller {

/// Expected creations and deletions by object name, and job versions written over, per job key
/// ("namespace/name"). Thread-safe.
class Expectations {
 public:
  using Clock = std::chrono::steady_clock;

  /// Expectations older than `ttl` count as satisfied (an event the watch lost must not block a
  /// job for ever; the reconciler is level-based and sees the truth on its next pass). `now` is
  /// the clock, replaceable in tests.
  explicit Expectations(std::chrono::milliseconds ttl = std::chrono::minutes(5),
                        std::function<Clock::time_point()> now = &Clock::now);

  /// The controller is about to create `names` for job `key`.
  void expect_creations(const std::string& key, const std::vector<std::string>& names);
  /// The controller is about to delete the pods `names` of job `key`.
  void expect_deletions(const std::string& key, const std::vector<std::string>& names);

  /// The informer showed object `name` of job `key` (or its create failed, so it will not come).
  void creation_observed(const std::string& key, const std::string& name);
  /// The informer showed pod `name` of job `key` gone or being deleted (or its delete failed).
  void deletion_observed(const std::string& key, const std::string& name);

  /// True when nothing is pending for `key`, or what is pending was expected longer than the TTL
  /// ago (then it is dropped).
  bool satisfied(const std::string& key);

  /// The controller wrote job `key` over its version `resource_version`: the cache still showing
  /// that version is stale (a pass on it would repeat the write and meet a 409).
  void expect_newer_job(const std::string& key, const std::string& resource_version);
  /// True when the cached job `key` at `resource_version` is a version the controller wrote over
  /// less than the TTL ago.
  bool job_is_stale(const std::string& key, const std::string& resource_version);

  /// Drops everything about `key` (the job was deleted).
  void forget(const std::string& key);

 private:
  struct Pending {
    std::set<std::string> creations;
    std::set<std::string> deletions;
    Clock::time_point since;
  };

  std::chrono::milliseconds ttl_;
  std::function<Clock::time_point()> now_;
  std::mutex mutex_;
  std::map<std::string, Pending> pending_;
  struct Superseded {
    std::string resource_version;
    Clock::time_point since;
  };
  std::map<std::string, Superseded> superseded_;
};

}  // namespace fiber::k8s::controller
