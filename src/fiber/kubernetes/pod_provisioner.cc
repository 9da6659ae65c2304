#include "fiber/kubernetes/pod_provisioner.h"

#include <algorithm>
#include <cstdio>

#include "fiber/base/log.h"
#include "fiber/kubernetes/fiberjob_scaler.h"

namespace fiber::internal {
namespace {

// The pod's name in a "name/uid" key.
std::string pod_name(const std::string& key) { return key.substr(0, key.find('/')); }

std::vector<std::string> pod_names(const std::vector<std::string>& keys) {
  std::vector<std::string> names;
  for (const auto& key : keys) names.push_back(pod_name(key));
  return names;
}

constexpr auto kLongestBackoff = std::chrono::seconds(5);

// How often the provisioner looks again without being woken (idle pods, timeouts), and how old
// its copy of the job's worker count may get while processes wait for pods (a `kubectl scale` or
// an HPA from outside changes how many are coming).
constexpr auto kPollInterval = std::chrono::milliseconds(250);
constexpr auto kRereadInterval = std::chrono::seconds(2);

}  // namespace

PodProvisioner::PodProvisioner(const Settings& settings, ProgressEngine& engine,
                               PodProvisionerHost& host, std::unique_ptr<FiberJobScaler> scaler,
                               int slots_per_pod)
    : settings_(settings),
      engine_(engine),
      host_(host),
      scaler_(std::move(scaler)),
      slots_per_pod_(std::max(1, slots_per_pod)) {}

PodProvisioner::~PodProvisioner() { stop(); }

void PodProvisioner::start() {
  thread_ = std::thread([this] { loop(); });
}

void PodProvisioner::stop() {
  {
    auto lock = engine_.lock();
    stop_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void PodProvisioner::report(const std::string& what, const std::exception& e) {
  const std::string text = what + ": " + e.what();
  if (text != last_error_) FIBER_LOG_WARNING("%s", text.c_str());
  last_error_ = text;
  backoff_ = std::min<std::chrono::milliseconds>(
      std::max(kPollInterval, backoff_ * 2),
      std::chrono::duration_cast<std::chrono::milliseconds>(kLongestBackoff));
  quiet_until_ = Clock::now() + backoff_;
}

PodProvisioner::Plan PodProvisioner::plan_locked(Clock::time_point now) {
  Plan plan;
  const auto pods = host_.pods_locked();
  int joined = 0;
  int starting = 0;  // workers of joined pods that have not said hello yet
  for (const auto& [name, use] : pods) {
    if (use.live > 0 && !use.releasing) ++joined;
    starting += use.starting;
  }
  // Released pods whose workers are all gone: their names can leave workersToDelete (a
  // replacement of the same name has another uid, another key).
  for (const auto& key : released_)
    if (!pods.contains(key)) plan.forget.push_back(key);

  // Pods asked for that have not joined yet bring slots_per_pod workers each.
  const int coming_pods = std::max(0, replicas_ - joined);
  const int wanted = host_.pod_slots_wanted_locked(coming_pods * slots_per_pod_ + starting);
  joined_starting_ = starting;
  const size_t waiting = host_.waiting_processes_locked();
  if (waiting == 0) {
    waiting_since_.reset();
  } else if (!waiting_since_ || joined > joined_pods_seen_) {
    waiting_since_ = now;
  }
  if (joined > joined_pods_seen_) starved_.clear();
  joined_pods_seen_ = joined;
  // Pods beyond those joined: the ones already asked for that are still coming, and more for
  // what they cannot cover. The scaler decides against the request it reads just before
  // writing, so a stale copy here never asks twice.
  if (wanted > 0) plan.grow_by = coming_pods + (wanted + slots_per_pod_ - 1) / slots_per_pod_;
  if (waiting > 0 && !starved_.empty()) {
    plan.fail = waiting;
    plan.fail_why = starved_;
  } else if (waiting_since_ && now - *waiting_since_ > settings_.pod_start_timeout) {
    plan.fail = waiting;
    plan.fail_why =
        std::to_string(std::max(1, coming_pods)) + " worker pod(s) asked of " +
        scaler_->describe() + " did not join within pod_start_timeout (" +
        std::to_string(settings_.pod_start_timeout.count()) +
        " s): see `kubectl describe fiberjob` and the pods' events (unschedulable? image?)" +
        (last_error_.empty() ? "" : "; last error: " + last_error_);
    starved_ = plan.fail_why;
    waiting_since_.reset();
  }
  plan.held = joined;
  if (waiting == 0 && wanted == 0) {
    for (const auto& [name, use] : pods) {
      // A pod whose ranks have not all said hello is not idle: the rest would get work there.
      if (use.releasing || use.live == 0 || use.idle < use.live || use.starting > 0) continue;
      if (now - use.idle_since < settings_.pod_idle_timeout) continue;
      if (held_by_floor_.contains(name) && now < held_by_floor_[name]) continue;
      plan.release.push_back(name);
      host_.set_pod_releasing_locked(name, true);
    }
  }
  return plan;
}

void PodProvisioner::carry_out(Plan& plan, std::unique_lock<std::mutex>& lock) {
  const auto now = Clock::now();
  const bool reread = !last_read_ || now - *last_read_ > kRereadInterval;
  const std::string error_before = last_error_;
  lock.unlock();
  std::optional<FiberJobScaler::Workers> seen;
  std::vector<std::string> released;
  bool forgotten = false;
  try {
    if (plan.grow_by > 0) {
      seen = scaler_->grow(plan.held, plan.grow_by);
    } else if (reread) {
      seen = scaler_->read();
    }
  } catch (const std::exception& e) {
    report("cannot ask " + scaler_->describe() + " for worker pods", e);
  }
  if (!plan.release.empty()) {
    try {
      released = scaler_->release(pod_names(plan.release), plan.held);
    } catch (const std::exception& e) {
      report("cannot release worker pods of " + scaler_->describe(), e);
    }
  }
  if (!plan.forget.empty()) {
    try {
      scaler_->forget(pod_names(plan.forget));
      forgotten = true;
    } catch (const std::exception& e) {
      report("cannot clear the release list of " + scaler_->describe(), e);
    }
  }
  lock.lock();
  if (seen) {
    replicas_ = seen->kept();
    max_replicas_ = seen->max_replicas;
    last_read_ = now;
    if (plan.held + plan.grow_by > replicas_ && replicas_ >= seen->max_replicas) {
      // The job allows no more pods: the processes beyond what its pods can hold fail now
      // instead of waiting for pods that will never be asked for.
      const int coming_pods = std::max(0, replicas_ - joined_pods_seen_);
      const int short_by =
          host_.pod_slots_wanted_locked(coming_pods * slots_per_pod_ + joined_starting_);
      if (short_by > 0) {
        host_.fail_waiting_locked(
            static_cast<size_t>(short_by),
            scaler_->describe() +
                " allows at most maxReplicas = " + std::to_string(seen->max_replicas) +
                " worker pods of " + std::to_string(slots_per_pod_) +
                " worker(s) each, all asked for already; raise spec.workers.maxReplicas");
      }
    }
  }
  for (const auto& pod : plan.release) {
    if (std::find(released.begin(), released.end(), pod_name(pod)) != released.end()) {
      released_.insert(pod);
      replicas_ = std::min(replicas_, --plan.held);
      host_.shut_down_pod_locked(pod);
    } else {
      // The job's floor keeps it (or the write failed): usable again, asked again later.
      host_.set_pod_releasing_locked(pod, false);
      held_by_floor_[pod] =
          now + std::max<Clock::duration>(settings_.pod_idle_timeout, std::chrono::seconds(1));
    }
  }
  if (forgotten)
    for (const auto& pod : plan.forget) released_.erase(pod);
  if (last_error_ == error_before) backoff_ = std::chrono::milliseconds(0);
}

void PodProvisioner::loop() {
  auto lock = engine_.lock();
  while (!stop_ && !host_.stopping_locked()) {
    const auto now = Clock::now();
    woken_ = false;
    try {
      Plan plan = plan_locked(now);
      if (plan.fail > 0) host_.fail_waiting_locked(plan.fail, plan.fail_why);
      const bool reread = !last_read_ || now - *last_read_ > kRereadInterval;
      const bool waiting = host_.waiting_processes_locked() > 0;
      if (now < quiet_until_) {
        // Backing off after a failed request: nothing is asked or released meanwhile.
        for (const auto& pod : plan.release) host_.set_pod_releasing_locked(pod, false);
      } else if (plan.grow_by > 0 || !plan.release.empty() || !plan.forget.empty() ||
                 (reread && (waiting || !known_))) {
        known_ = true;
        carry_out(plan, lock);
        if (stop_ || host_.stopping_locked()) break;
      }
    } catch (const std::exception& e) {
      // The master's side threw (a bug): worth a line, not the launcher.
      FIBER_LOG_WARNING("worker pods: %s", e.what());
    }
    wake_.wait_for(lock, kPollInterval, [this] { return woken_ || stop_.load(); });
  }
}

}  // namespace fiber::internal
