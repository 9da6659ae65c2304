// The FiberJob controller: informers on FiberJobs and on the pods and Services they own, a work
// queue of job keys, and workers that reconcile one job at a time: read the caches, decide with
// reconcile(), act through the API, record Events, write the status.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "k8s/client/api_client.h"
#include "k8s/client/event_recorder.h"
#include "k8s/client/informer.h"
#include "k8s/client/log_sink.h"
#include "k8s/client/work_queue.h"
#include "k8s/controller/expectations.h"
#include "k8s/controller/metrics.h"
#include "k8s/controller/reconcile.h"

namespace fiber::k8s::controller {

/// Settings of a FiberJobController.
struct ControllerOptions {
  /// Namespace to watch; empty: all namespaces.
  std::string watch_namespace;
  /// Jobs reconciled at once (worker threads).
  int workers = 4;
  /// Shapes the objects created (the name-service image). Its api_server_egress, when empty,
  /// is taken from EndpointSlice default/kubernetes, read again at most every minute while a job
  /// needs it (the control plane's addresses change in an upgrade).
  ReconcileSettings reconcile;
  /// Where the controller's log lines go (one per action, with job=NS/NAME).
  LogSink log = stderr_log_sink();
};

/// What one pass over a job ended with.
struct KeyOutcome {
  ReconcileResult result = ReconcileResult::kOk;
  /// Look at the job again after this long, even if nothing changes.
  std::optional<std::chrono::seconds> requeue_after;
};

/// Runs the informers always and the reconciling workers while told to (while leading).
class FiberJobController {
 public:
  /// `client`, `recorder` and `metrics` must outlive the controller.
  FiberJobController(ApiClient& client, EventRecorder& recorder, ControllerMetrics& metrics,
                     ControllerOptions options);
  /// Stops everything.
  ~FiberJobController();
  FiberJobController(const FiberJobController&) = delete;
  FiberJobController& operator=(const FiberJobController&) = delete;

  /// Starts the informers (list + watch); their events queue job keys.
  void start_informers();
  /// True once every informer has its first list.
  bool caches_synced() const;
  /// Waits until caches_synced() or `timeout`; returns caches_synced().
  bool wait_for_sync(std::chrono::milliseconds timeout) const;

  /// Starts the worker threads and queues every known job (on becoming leader). Idempotent.
  void start_workers();
  /// Stops the worker threads after their current pass (on losing the lead). Idempotent.
  void stop_workers();
  /// Asked before every pass over a job and before each of its writes; false puts the job back and
  /// acts on nothing more. Set before
  /// the workers start. The leader elector's is_leader() turns false once a renewal has not
  /// succeeded within the renew deadline, which is shorter than the Lease's duration, so a leader
  /// whose renewal hangs stops acting before anyone else may take over.
  void set_lead_check(std::function<bool()> still_leading);
  /// Stops the workers, the informers and the queue. Idempotent.
  void stop();

  /// Keys ready in the work queue.
  std::size_t queue_depth() const;

  /// Reconciles job `key` ("namespace/name") once, on the caller's thread.
  KeyOutcome reconcile_key(const std::string& key);

 private:
  struct Actions;

  void register_handlers();
  void enqueue_job_of(const nlohmann::json& object);
  void observe_creation_of(const nlohmann::json& object);
  void observe_deletion_of(const nlohmann::json& object);
  void run_worker(std::stop_token stop);
  void process(const std::string& key);
  std::vector<nlohmann::json> pods_of(const std::string& ns, const std::string& name) const;
  std::optional<std::string> read_name_service_uri(const JobSpec& spec);
  void apply_creations(const nlohmann::json& job, const JobSpec& spec, const ReconcilePlan& plan,
                       Actions& actions);
  void apply_updates(const nlohmann::json& job, const JobSpec& spec, const ReconcilePlan& plan,
                     Actions& actions);
  std::vector<ForeignObject> foreign_objects_of(const std::string& key, const JobSpec& spec);
  bool existing_object_is_ours(const JobSpec& spec, const std::string& key, const std::string& kind,
                               const std::string& name);
  /// Whether the job's join-token Secret is there and the job's: a GET, after which a Secret
  /// found is trusted for kSecretRecheck (one deleted by hand is made again within that).
  bool join_token_secret_is_ours(const JobSpec& spec, const std::string& key);
  /// Throws when the lead check says this controller may no longer lead: every write asks first,
  /// so a long pass stops acting as soon as the lead is in doubt.
  void ensure_leading() const;
  void apply_deletions(const nlohmann::json& job, const JobSpec& spec, const ReconcilePlan& plan,
                       Actions& actions);
  void write_status(const nlohmann::json& job, const JobSpec& spec, const ReconcilePlan& plan,
                    Actions& actions);
  void delete_job(const nlohmann::json& job, const JobSpec& spec, Actions& actions);
  void log(LogLevel level, const std::string& key, const std::string& message) const;

  ApiClient& client_;
  EventRecorder& recorder_;
  ControllerMetrics& metrics_;
  ControllerOptions options_;
  std::function<bool()> still_leading_;
  Expectations expectations_;
  WorkQueue queue_;
  std::unique_ptr<Informer> jobs_;
  std::unique_ptr<Informer> pods_;
  std::unique_ptr<Informer> services_;
  std::unique_ptr<Informer> config_maps_;
  // The launcher's ServiceAccount, Role and RoleBinding: watched so that every pass sees one
  // missing (never created, deleted by hand, a create that failed) and creates it again.
  std::unique_ptr<Informer> service_accounts_;
  std::unique_ptr<Informer> roles_;
  std::unique_ptr<Informer> role_bindings_;
  // The job's NetworkPolicy, watched for the same reason. Not its join-token Secret: a
  // controller allowed to list or watch Secrets reads every Secret in its reach, so that one is
  // read by name (join_token_secret_is_ours).
  std::unique_ptr<Informer> network_policies_;

  /// Every informer, the jobs' first; the ones of objects the controller creates for its jobs.
  std::vector<Informer*> informers() const;
  std::vector<Informer*> owned_informers() const;
  /// Objects of someone else found holding a job's names (a create met AlreadyExists), per key.
  std::mutex foreign_mutex_;
  std::map<std::string, std::vector<ForeignObject>> foreign_by_job_;
  /// Since when the passes over a job have found an unexplained shortfall of workers (the plan's
  /// unexplained_shortfall), per key. Kept in memory only: a new leader waits kLossConfirmation
  /// again before it counts a loss, which delays a replacement and never counts one twice.
  std::mutex shortfall_mutex_;
  std::map<std::string, SystemTime> shortfall_since_;
  /// Pod creates the API server refused, per key (ObservedState::refused_creations): a worker's
  /// are those of the last pass, a launcher's or name service's those of the last pass that
  /// tried to create one.
  std::mutex refused_mutex_;
  std::map<std::string, std::vector<RefusedCreation>> refused_by_job_;
  /// When each job's join-token Secret was last found present, per key.
  std::mutex secrets_mutex_;
  std::map<std::string, std::chrono::steady_clock::time_point> secret_seen_;

  /// Where the API server listens (the endpoints of EndpointSlice default/kubernetes), as last
  /// read, for the egress policies of jobs in namespaces that isolate egress.
  std::vector<EgressPeer> api_server_endpoints();
  std::mutex endpoints_mutex_;
  std::vector<EgressPeer> endpoints_;
  std::optional<std::chrono::steady_clock::time_point> endpoints_read_;
  std::string endpoints_error_;  ///< The last read's error, logged once.

  std::mutex workers_mutex_;
  std::vector<std::jthread> workers_;
  std::atomic<bool> stopped_{false};
};

}  // namespace fiber::k8s::controller
