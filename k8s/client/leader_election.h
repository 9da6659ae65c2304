// One active controller among several: leader election on a coordination.k8s.io/v1 Lease, with
// client-go's rules (a lease is free when absent, released, or not renewed within its duration as
// measured by our own clock since we last saw it change).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "k8s/client/api_client.h"
#include "k8s/client/log_sink.h"

namespace fiber::k8s {

/// Settings of a LeaderElector.
struct LeaderElectionConfig {
  /// This candidate's unique name (e.g. pod name + random suffix); written to holderIdentity.
  std::string identity;
  /// The Lease object's name and namespace.
  std::string lease_name;
  std::string lease_namespace;
  /// How long a lease holds without renewal (leaseDurationSeconds; whole seconds, at least 1).
  std::chrono::milliseconds lease_duration{15'000};
  /// The leader gives up when it could not renew for this long (must be < lease_duration).
  std::chrono::milliseconds renew_deadline{10'000};
  /// Time between attempts to acquire or renew.
  std::chrono::milliseconds retry_period{2'000};
  /// Clear holderIdentity on stop() while leading, so a successor takes over at once.
  bool release_on_stop = true;
  /// Called on the elector's thread when this candidate becomes leader. Must return promptly
  /// (start the work on threads of its own): the lease is not renewed while it runs.
  std::function<void()> on_started_leading;
  /// Called on the elector's thread when it stops leading (lost the lease, or stop()); the
  /// elector then campaigns again unless stopped. Must return promptly.
  std::function<void()> on_stopped_leading;
  /// Called when the observed holder changes (with the new holder's identity; also our own).
  std::function<void(const std::string& identity)> on_new_leader;
  /// Where failed attempts are reported.
  LogSink log = stderr_log_sink();
};

/// Runs the election on a thread of its own until stop().
class LeaderElector {
 public:
  /// `client` must outlive the elector. Throws std::invalid_argument on an empty identity or
  /// lease name, or renew_deadline >= lease_duration.
  LeaderElector(ApiClient& client, LeaderElectionConfig config);
  /// Stops (and releases, see release_on_stop).
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  /// Starts campaigning on a background thread.
  void start();
  /// Stops campaigning; when leading, calls on_stopped_leading and then releases the lease (if
  /// configured), so a successor never overlaps with this leader's work. Idempotent.
  void stop();
  /// True while this candidate holds the lease (an attempt that renewed it began within
  /// renew_deadline: the time is taken when the request is sent, not when its answer arrives).
  bool is_leader() const;
  /// The last observed holderIdentity ("" when nobody holds the lease).
  std::string leader() const;
  /// Waits until this candidate leads, or `timeout`; returns is_leader().
  bool wait_for_leadership(std::chrono::milliseconds timeout) const;

 private:
  using Clock = std::chrono::steady_clock;

  void run(std::stop_token stop);
  bool try_acquire_or_renew();
  void observe(const nlohmann::json& lease);
  nlohmann::json lease_spec(const nlohmann::json& previous_spec, bool takeover) const;
  void release();
  void set_leading(bool leading);

  ApiClient& client_;
  LeaderElectionConfig config_;
  ResourceRef leases_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  bool leading_ = false;
  std::string observed_holder_;
  std::optional<nlohmann::json> observed_lease_;
  Clock::time_point observed_at_{};
  Clock::time_point last_renew_{};
  std::jthread thread_;
};

}  // namespace fiber::k8s
