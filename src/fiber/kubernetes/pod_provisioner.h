// Worker pods on demand, for a master running as the launcher of a FiberJob: processes waiting
// for a worker become a higher request in the job's release ConfigMap (workersRequested), pods
// whose workers have all been idle for Settings::pod_idle_timeout are released (named in
// workersToDelete as the request goes down by as many), and processes that wait longer than
// Settings::pod_start_timeout for pods that do not come fail with fiber::SpawnError. The pods'
// ranks join through the rendezvous like any joining job; the provisioner only asks and releases.
// Internal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fiber/engine/link.h"
#include "fiber/engine/progress_engine.h"
#include "fiber/engine/settings.h"

namespace fiber::internal {

class FiberJobScaler;

/// The workers of one pod, as the master sees them. Pods are keyed "name/uid": a replacement may
/// reuse a lost pod's name.
struct PodUse {
  int live = 0;                  ///< Workers of the pod that have not left.
  int idle = 0;                  ///< ...of which idle, running nothing.
  int starting = 0;              ///< Workers of its job that have not said hello yet.
  Clock::time_point idle_since;  ///< When the last of them became idle.
  bool releasing = false;        ///< Being released: no new work goes there.
};

/// What the provisioner needs of the master; everything with the runtime's lock held.
class PodProvisionerHost {
 public:
  virtual ~PodProvisionerHost() = default;
  virtual bool stopping_locked() const = 0;
  /// Workers wanted beyond `coming` ones on their way (processes waiting for a worker).
  virtual int pod_slots_wanted_locked(int coming) const = 0;
  /// Processes waiting for a worker.
  virtual size_t waiting_processes_locked() const = 0;
  /// Every pod that has workers here, by pod name.
  virtual std::map<std::string, PodUse> pods_locked() const = 0;
  /// Marks the workers of `pod` as leaving soon (true: no new work goes there) or usable again.
  virtual void set_pod_releasing_locked(const std::string& pod, bool releasing) = 0;
  /// Tells the (idle, releasing) workers of `pod` to leave.
  virtual void shut_down_pod_locked(const std::string& pod) = 0;
  /// Fails up to `count` waiting processes with fiber::SpawnError(`why`).
  virtual void fail_waiting_locked(size_t count, const std::string& why) = 0;
};

class PodProvisioner {
 public:
  PodProvisioner(const Settings& settings, ProgressEngine& engine, PodProvisionerHost& host,
                 std::unique_ptr<FiberJobScaler> scaler, int slots_per_pod);
  ~PodProvisioner();
  PodProvisioner(const PodProvisioner&) = delete;
  PodProvisioner& operator=(const PodProvisioner&) = delete;

  void start();
  /// Something changed (a process waits, a worker joined or went idle); with the lock held.
  void wake_locked() {
    woken_ = true;
    wake_.notify_one();
  }
  /// Ends the thread (the host says stopping_locked() by now). A request in flight to the API
  /// server finishes first (bounded by the client's timeouts).
  void stop();

 private:
  struct Plan {
    int grow_by = 0;                   ///< Pods to ask for beyond the joined ones (0: none).
    std::vector<std::string> release;  ///< Idle pods to give back (keys: "name/uid")...
    int held = 0;                      ///< ...of the pods whose workers joined.
    std::vector<std::string> forget;   ///< Released pods now gone: names to clear.
    size_t fail = 0;                   ///< Waiting processes to fail (pods did not come).
    std::string fail_why;
  };
  void loop();
  /// Decides what to ask of Kubernetes now; with the lock held.
  Plan plan_locked(Clock::time_point now);
  /// Carries the plan out against the API server (lock released meanwhile).
  void carry_out(Plan& plan, std::unique_lock<std::mutex>& lock);
  /// Reports a failed request (once per distinct message) and backs off.
  void report(const std::string& what, const std::exception& e);

  const Settings& settings_;
  ProgressEngine& engine_;
  PodProvisionerHost& host_;
  std::unique_ptr<FiberJobScaler> scaler_;
  const int slots_per_pod_;
  std::condition_variable wake_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  bool woken_ = false;  ///< Something changed since the last plan (with the lock held).

  // With the lock held.
  int replicas_ = 0;      ///< Worker pods the job keeps (Workers::kept()) as last read or written.
  int max_replicas_ = 0;  ///< spec.workers.maxReplicas as last read.
  bool known_ = false;    ///< The spec has been read at least once.
  std::optional<Clock::time_point> last_read_;
  /// Since when processes have waited for pods with none joining meanwhile.
  std::optional<Clock::time_point> waiting_since_;
  int joined_pods_seen_ = 0;
  int joined_starting_ = 0;  ///< Workers of joined pods still to say hello, as last planned.
  /// Why asked-for pods did not come, once pod_start_timeout has passed with none joining: until
  /// a pod joins, processes that wait for one fail at once with this instead of waiting again.
  std::string starved_;
  std::set<std::string> released_;  ///< Named in workersToDelete by us, not yet forgotten.
  /// Idle pods the job's floor kept (minReplicas, or replicas set by people or an HPA), or whose
  /// release failed: not to be tried again before then.
  std::map<std::string, Clock::time_point> held_by_floor_;
  std::string last_error_;  ///< The API's last refusal (reported once, quoted on timeout).
  /// After a failed request none is sent before this (a doubling back-off, so that a refusing or
  /// unreachable API server is not hammered).
  Clock::time_point quiet_until_{};
  std::chrono::milliseconds backoff_{0};
};

}  // namespace fiber::internal
