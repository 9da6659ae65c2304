#include "k8s/client/leader_election.h"

#include <random>
#include <stdexcept>

#include "k8s/client/backoff.h"
#include "k8s/client/json_fields.h"
#include "k8s/client/time_format.h"

namespace fiber::k8s {
namespace {

using nlohmann::json;

std::int64_t whole_seconds_at_least_one(std::chrono::milliseconds duration) {
  return std::max<std::int64_t>(1, std::chrono::ceil<std::chrono::seconds>(duration).count());
}

}  // namespace

LeaderElector::LeaderElector(ApiClient& client, LeaderElectionConfig config)
    : client_(client), config_(std::move(config)), leases_(leases_ref(config_.lease_namespace)) {
  if (config_.identity.empty()) throw std::invalid_argument("leader election needs an identity");
  if (config_.lease_name.empty()) throw std::invalid_argument("leader election needs a lease name");
  if (config_.lease_namespace.empty()) {
    throw std::invalid_argument("leader election needs a lease namespace");
  }
  if (config_.renew_deadline >= config_.lease_duration) {
    throw std::invalid_argument(
        "leader election: renew_deadline must be shorter than lease_duration");
  }
  if (config_.retry_period <= std::chrono::milliseconds::zero()) {
    throw std::invalid_argument("leader election: retry_period must be positive");
  }
}

LeaderElector::~LeaderElector() { stop(); }

void LeaderElector::start() {
  if (thread_.joinable()) throw std::logic_error("leader elector already started");
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void LeaderElector::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

bool LeaderElector::is_leader() const {
  std::lock_guard lock(mutex_);
  return leading_ && Clock::now() - last_renew_ < config_.renew_deadline;
}

std::string LeaderElector::leader() const {
  std::lock_guard lock(mutex_);
  return observed_holder_;
}

bool LeaderElector::wait_for_leadership(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [this] { return leading_; });
  return leading_ && Clock::now() - last_renew_ < config_.renew_deadline;
}

void LeaderElector::set_leading(bool leading) {
  {
    std::lock_guard lock(mutex_);
    if (leading_ == leading) return;
    leading_ = leading;
    changed_.notify_all();
  }
  const auto& callback = leading ? config_.on_started_leading : config_.on_stopped_leading;
  if (callback) callback();
}

void LeaderElector::run(std::stop_token stop) {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  // Up to 20% more than the retry period, so candidates started together do not collide forever.
  std::uniform_real_distribution<double> jitter(1.0, 1.2);
  while (!stop.stop_requested()) {
    while (!stop.stop_requested() && !try_acquire_or_renew()) {
      sleep_unless_stopped(stop, std::chrono::duration_cast<std::chrono::milliseconds>(
                                     config_.retry_period * jitter(random)));
    }
    if (stop.stop_requested()) break;
    set_leading(true);
    while (!stop.stop_requested()) {
      sleep_unless_stopped(stop, config_.retry_period);
      if (stop.stop_requested()) break;
      if (try_acquire_or_renew()) continue;
      std::lock_guard lock(mutex_);
      if (Clock::now() - last_renew_ >= config_.renew_deadline) break;
    }
    if (stop.stop_requested()) break;
    log_to(config_.log, LogLevel::kWarning,
           "leader election: " + config_.identity + " lost lease " + config_.lease_namespace + "/" +
               config_.lease_name);
    set_leading(false);
  }
  bool was_leading;
  {
    std::lock_guard lock(mutex_);
    was_leading = leading_;
  }
  // The work stops before the lease is released, so a successor never overlaps with it.
  set_leading(false);
  if (was_leading && config_.release_on_stop) release();
}

void LeaderElector::observe(const json& lease) {
  const json spec = lease.value("spec", json::object());
  const std::string holder = string_field(spec, "holderIdentity");
  bool new_holder = false;
  {
    std::lock_guard lock(mutex_);
    // Expiry is judged by our clock from when we saw the record change, never by the holder's
    // clock in renewTime: clocks of different machines disagree.
    if (!observed_lease_ || observed_lease_->value("spec", json::object()) != spec) {
      observed_at_ = Clock::now();
    }
    observed_lease_ = lease;
    new_holder = holder != observed_holder_;
    observed_holder_ = holder;
  }
  if (new_holder && !holder.empty() && config_.on_new_leader) config_.on_new_leader(holder);
}

json LeaderElector::lease_spec(const json& previous_spec, bool takeover) const {
  const std::string now = format_micro_time(std::chrono::system_clock::now());
  json spec = previous_spec.is_object() ? previous_spec : json::object();
  spec["holderIdentity"] = config_.identity;
  spec["leaseDurationSeconds"] = whole_seconds_at_least_one(config_.lease_duration);
  spec["renewTime"] = now;
  if (takeover || !spec.contains("acquireTime")) spec["acquireTime"] = now;
  const std::int64_t transitions = spec.value("leaseTransitions", std::int64_t{0});
  spec["leaseTransitions"] = takeover ? transitions + 1 : transitions;
  return spec;
}

bool LeaderElector::try_acquire_or_renew() {
  // The lease counts from when this attempt began, not from when the answer came: the API server
  // may have stored the renewal long before a slow answer arrived, and others count the lease's
  // duration from when they saw it change. Stamped on arrival, a leader whose answer was delayed
  // by more than lease duration - renew deadline would act while a successor may already lead.
  const Clock::time_point attempt_started = Clock::now();
  try {
    std::optional<json> current;
    try {
      current = client_.get(leases_, config_.lease_name);
    } catch (const ApiError& error) {
      if (!error.is_not_found()) throw;
    }
    json desired;
    if (current) {
      observe(*current);
      const json spec = current->value("spec", json::object());
      const std::string holder = string_field(spec, "holderIdentity");
      const bool ours = holder == config_.identity;
      if (!holder.empty() && !ours) {
        const auto duration = std::chrono::seconds(
            spec.value("leaseDurationSeconds", whole_seconds_at_least_one(config_.lease_duration)));
        std::lock_guard lock(mutex_);
        if (Clock::now() < observed_at_ + duration) return false;  // held and not expired
      }
      desired = *current;
      desired["spec"] = lease_spec(spec, !ours);
    } else {
      desired = {
          {"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
          {"spec", lease_spec(json::object(), false)}};
    }
    try {
      observe(current ? client_.replace(leases_, desired) : client_.create(leases_, desired));
    } catch (const ApiError& error) {
      if (error.is_conflict()) return false;  // another candidate created or wrote it first
      throw;
    }
    std::lock_guard lock(mutex_);
    last_renew_ = attempt_started;
    // Answered too late to lead on: the renew deadline has passed since the attempt began.
    return Clock::now() - attempt_started < config_.renew_deadline;
  } catch (const std::exception& error) {
    log_to(config_.log, LogLevel::kWarning,
           "leader election on lease " + config_.lease_namespace + "/" + config_.lease_name + ": " +
               error.what());
    return false;
  }
}

void LeaderElector::release() {
  std::optional<json> lease;
  {
    std::lock_guard lock(mutex_);
    lease = observed_lease_;
  }
  if (!lease ||
      string_field(lease->value("spec", json::object()), "holderIdentity") != config_.identity) {
    return;
  }
  // Like client-go: an empty holder with a one-second duration, so any candidate may take it now.
  const std::string now = format_micro_time(std::chrono::system_clock::now());
  json& spec = (*lease)["spec"];
  spec["holderIdentity"] = "";
  spec["leaseDurationSeconds"] = 1;
  spec["renewTime"] = now;
  spec["acquireTime"] = now;
  try {
    observe(client_.replace(leases_, *lease));
  } catch (const std::exception& error) {
    log_to(config_.log, LogLevel::kWarning,
           "leader election: releasing lease " + config_.lease_namespace + "/" +
               config_.lease_name + " failed: " + error.what());
  }
}

}  // namespace fiber::k8s
