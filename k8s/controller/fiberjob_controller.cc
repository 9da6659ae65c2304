#include "k8s/controller/fiberjob_controller.h"

#include <stdexcept>

#include "k8s/client/errors.h"
#include "k8s/client/json_fields.h"
#include "k8s/client/resource_ref.h"
#include "k8s/controller/name_service_uri.h"
#include "k8s/controller/object_names.h"

namespace fiber::k8s::controller {
namespace {

using nlohmann::json;

// How long a worker waits for a key before it looks whether it should stop.
constexpr std::chrono::milliseconds kWorkerPollInterval{200};
// How soon a job put back while the lead is in doubt is looked at again.
constexpr std::chrono::milliseconds kLeadCheckRetry{500};
// When to look again at a job skipped while the cache catches up with the controller's own actions.
constexpr std::chrono::seconds kCacheWaitRequeue{30};

// The key of the job an owned object belongs to, from its job-name label; "" when unlabelled.
std::string job_key_of(const json& object) {
  const std::string job = label_value(object, kJobNameLabel);
  return job.empty() ? std::string() : object_key(metadata_field(object, "namespace"), job);
}

bool has_deletion_timestamp(const json& object) {
  const json::json_pointer pointer("/metadata/deletionTimestamp");
  return object.contains(pointer) && !object.at(pointer).is_null();
}

ResourceRef ref_of(const json& object, const std::string& ns) {
  return object.value("kind", "") == "Service" ? services_ref(ns) : pods_ref(ns);
}

std::string describe(const std::exception& error) { return error.what(); }

}  // namespace

// What went wrong while a plan was applied.
struct FiberJobController::Actions {
  std::string key;
  bool failed = false;
  bool conflict = false;
};

FiberJobController::FiberJobController(ApiClient& client, EventRecorder& recorder,
                                       ControllerMetrics& metrics, ControllerOptions options)
    : client_(client), recorder_(recorder), metrics_(metrics), options_(std::move(options)) {
  if (options_.workers < 1) throw std::invalid_argument("the controller needs at least 1 worker");
  auto informer_options = [&](ResourceRef ref, bool owned) {
    InformerOptions informer;
    informer.ref = std::move(ref);
    if (owned) {
      informer.label_selector = std::string(kJobNameLabel);
      informer.index_label = std::string(kJobNameLabel);
    }
    informer.log = options_.log;
    return informer;
  };
  jobs_ = std::make_unique<Informer>(
      client_, informer_options(fiberjobs_ref(options_.watch_namespace), false));
  pods_ = std::make_unique<Informer>(client_,
                                     informer_options(pods_ref(options_.watch_namespace), true));
  services_ = std::make_unique<Informer>(
      client_, informer_options(services_ref(options_.watch_namespace), true));
  register_handlers();
}

FiberJobController::~FiberJobController() { stop(); }

void FiberJobController::register_handlers() {
  jobs_->on_add([this](const json& job) { queue_.add(fiber::k8s::object_key(job)); });
  jobs_->on_update(
      [this](const json&, const json& job) { queue_.add(fiber::k8s::object_key(job)); });
  jobs_->on_delete([this](const json& job) {
    const std::string key = fiber::k8s::object_key(job);
    expectations_.forget(key);
    queue_.add(key);
  });
  for (Informer* owned : {pods_.get(), services_.get()}) {
    owned->on_add([this](const json& object) {
      observe_creation_of(object);
      if (has_deletion_timestamp(object)) observe_deletion_of(object);
      enqueue_job_of(object);
    });
    owned->on_update([this](const json&, const json& object) {
      if (has_deletion_timestamp(object)) observe_deletion_of(object);
      enqueue_job_of(object);
    });
    owned->on_delete([this](const json& object) {
      observe_deletion_of(object);
      enqueue_job_of(object);
    });
  }
}

void FiberJobController::enqueue_job_of(const json& object) {
  const std::string key = job_key_of(object);
  if (!key.empty()) queue_.add(key);
}

void FiberJobController::observe_creation_of(const json& object) {
  const std::string key = job_key_of(object);
  if (!key.empty()) expectations_.creation_observed(key, metadata_field(object, "name"));
}

void FiberJobController::observe_deletion_of(const json& object) {
  const std::string key = job_key_of(object);
  if (!key.empty()) expectations_.deletion_observed(key, metadata_field(object, "name"));
}

void FiberJobController::start_informers() {
  jobs_->start();
  pods_->start();
  services_->start();
}

bool FiberJobController::caches_synced() const {
  return jobs_->has_synced() && pods_->has_synced() && services_->has_synced();
}

bool FiberJobController::wait_for_sync(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const Informer* informer : {jobs_.get(), pods_.get(), services_.get()}) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!informer->wait_for_sync(std::max(left, std::chrono::milliseconds(0)))) return false;
  }
  return true;
}

void FiberJobController::start_workers() {
  std::lock_guard lock(workers_mutex_);
  if (!workers_.empty() || stopped_) return;
  for (int i = 0; i < options_.workers; ++i) {
    workers_.emplace_back([this](std::stop_token stop) { run_worker(stop); });
  }
  // A new leader looks at every job once: the previous one may have left work undone.
  for (const json& job : jobs_->list()) queue_.add(fiber::k8s::object_key(job));
}

void FiberJobController::stop_workers() {
  std::vector<std::jthread> stopping;
  {
    std::lock_guard lock(workers_mutex_);
    stopping.swap(workers_);
  }
  for (std::jthread& worker : stopping) worker.request_stop();
  stopping.clear();  // joins
}

void FiberJobController::stop() {
  stopped_ = true;
  stop_workers();
  jobs_->stop();
  pods_->stop();
  services_->stop();
  queue_.shut_down();
}

std::size_t FiberJobController::queue_depth() const { return queue_.depth(); }

void FiberJobController::run_worker(std::stop_token stop) {
  while (!stop.stop_requested() && !queue_.shutting_down()) {
    const std::optional<std::string> key = queue_.get_for(kWorkerPollInterval);
    if (!key) continue;
    if (stop.stop_requested()) {
      // Told to stop (the lead was lost) while waiting: the key waits for the next leader.
      queue_.done(*key);
      queue_.add(*key);
      return;
    }
    process(*key);
  }
}

void FiberJobController::set_lead_check(std::function<bool()> still_leading) {
  still_leading_ = std::move(still_leading);
}

void FiberJobController::process(const std::string& key) {
  if (still_leading_ && !still_leading_()) {
    // The lead may be lost (a renewal is overdue): another controller may act on this job now.
    queue_.add_after(key, kLeadCheckRetry);
    queue_.done(key);
    return;
  }
  const auto started = std::chrono::steady_clock::now();
  KeyOutcome outcome;
  try {
    outcome = reconcile_key(key);
  } catch (const std::exception& error) {
    log(LogLevel::kError, key, "reconcile failed: " + describe(error));
    outcome.result = ReconcileResult::kError;
  }
  metrics_.observe_reconcile(outcome.result, std::chrono::steady_clock::now() - started);
  if (outcome.result == ReconcileResult::kOk) {
    queue_.forget(key);
  } else {
    queue_.add_rate_limited(key);
  }
  if (outcome.requeue_after) queue_.add_after(key, *outcome.requeue_after);
  queue_.done(key);
}

std::vector<json> FiberJobController::pods_of(const std::string& ns,
                                              const std::string& name) const {
  std::vector<json> pods;
  for (json& pod : pods_->by_label(name)) {
    if (metadata_field(pod, "namespace") == ns) pods.push_back(std::move(pod));
  }
  return pods;
}

KeyOutcome FiberJobController::reconcile_key(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos) throw std::invalid_argument("job key without namespace: " + key);
  const std::string ns = key.substr(0, slash);
  const std::string name = key.substr(slash + 1);
  const std::optional<json> job = jobs_->get(ns, name);
  if (!job) {
    expectations_.forget(key);
    return {};
  }
  // The cache has not shown our last creations or deletions yet: acting now could repeat them.
  // Their informer events queue the job again; the requeue is there for events a broken watch lost.
  if (!expectations_.satisfied(key)) return {ReconcileResult::kOk, kCacheWaitRequeue};
  // The cache still shows the version our last status write replaced; its update event follows.
  if (expectations_.job_is_stale(key, metadata_field(*job, "resourceVersion"))) {
    return {ReconcileResult::kOk, kCacheWaitRequeue};
  }

  JobSpec spec;
  try {
    spec = parse_job_spec(*job);
  } catch (const InvalidJobError& error) {
    log(LogLevel::kWarning, key, std::string("invalid spec: ") + error.what());
    recorder_.warning(*job, "InvalidSpec", error.what());
    return {};
  }

  ObservedState observed;
  observed.status = job->value("status", json::object());
  observed.pods = pods_of(ns, name);
  observed.service_exists = services_->get(ns, service_name(name)).has_value();
  observed.now = std::chrono::system_clock::now();
  ReconcilePlan plan = reconcile(spec, observed, options_.reconcile);
  if (plan.read_name_service_log) {
    observed.name_service_uri_from_log = read_name_service_uri(spec);
    if (observed.name_service_uri_from_log) plan = reconcile(spec, observed, options_.reconcile);
  }

  Actions actions{key};
  apply_creations(*job, spec, plan, actions);
  apply_deletions(*job, spec, plan, actions);
  for (const JobEvent& event : plan.events) {
    log(event.warning ? LogLevel::kWarning : LogLevel::kInfo, key,
        event.reason + ": " + event.message);
    recorder_.record(*job, event.warning ? EventType::kWarning : EventType::kNormal, event.reason,
                     event.message);
  }
  write_status(*job, spec, plan, actions);
  if (plan.delete_job) delete_job(*job, spec, actions);

  KeyOutcome outcome;
  outcome.requeue_after = plan.requeue_after;
  if (actions.conflict) {
    outcome.result = ReconcileResult::kConflict;
  } else if (actions.failed) {
    outcome.result = ReconcileResult::kError;
  }
  return outcome;
}

std::optional<std::string> FiberJobController::read_name_service_uri(const JobSpec& spec) {
  const std::string pod = name_service_pod_name(spec.name);
  // The URI is in the log of the pod's first container (the one its template names first): with a
  // second container (a sidecar a mesh injects, a helper in the template) the API server refuses a
  // log request that names none.
  std::string container;
  if (const std::optional<json> cached = pods_->get(spec.ns, pod)) {
    const json containers =
        cached->value("spec", json::object()).value("containers", json::array());
    if (!containers.empty() && containers[0].is_object()) {
      container = containers[0].value("name", std::string());
    }
  }
  try {
    std::optional<std::string> uri =
        find_name_service_uri(client_.read_log(spec.ns, pod, container));
    if (uri) log(LogLevel::kInfo, object_key(spec.ns, spec.name), "name service URI " + *uri);
    return uri;
  } catch (const ClientError& error) {
    log(LogLevel::kWarning, object_key(spec.ns, spec.name),
        "cannot read the log of pod " + pod + ": " + describe(error));
    return std::nullopt;
  }
}

void FiberJobController::apply_creations(const json& job, const JobSpec& spec,
                                         const ReconcilePlan& plan, Actions& actions) {
  std::vector<std::string> names;
  for (const json& object : plan.creations) names.push_back(object["metadata"]["name"]);
  expectations_.expect_creations(actions.key, names);
  for (const json& object : plan.creations) {
    const std::string name = object["metadata"]["name"];
    const std::string kind = object.value("kind", "Pod");
    try {
      client_.create(ref_of(object, spec.ns), object);
      log(LogLevel::kInfo, actions.key, "created " + kind + " " + name);
      recorder_.normal(job, "SuccessfulCreate", "Created " + kind + ": " + name);
    } catch (const ClientError& error) {
      // Nothing will appear for a create that failed: expect it no more.
      expectations_.creation_observed(actions.key, name);
      const auto* api_error = dynamic_cast<const ApiError*>(&error);
      if (api_error != nullptr && api_error->is_already_exists()) {
        log(LogLevel::kInfo, actions.key, kind + " " + name + " exists already");
        continue;
      }
      actions.failed = true;
      log(LogLevel::kError, actions.key,
          "cannot create " + kind + " " + name + ": " + describe(error));
      recorder_.warning(job, "FailedCreate",
                        "Error creating " + kind + " " + name + ": " + describe(error));
    }
  }
}

void FiberJobController::apply_deletions(const json& job, const JobSpec& spec,
                                         const ReconcilePlan& plan, Actions& actions) {
  std::vector<std::string> names;
  for (const PodDeletion& deletion : plan.deletions) names.push_back(deletion.name);
  expectations_.expect_deletions(actions.key, names);
  for (const PodDeletion& deletion : plan.deletions) {
    DeleteOptions options;
    options.precondition_uid = deletion.uid;
    try {
      client_.remove(pods_ref(spec.ns), deletion.name, options);
      log(LogLevel::kInfo, actions.key,
          "deleted Pod " + deletion.name + " (" + deletion.reason + ")");
      recorder_.normal(job, "SuccessfulDelete",
                       "Deleted Pod: " + deletion.name + " (" + deletion.reason + ")");
    } catch (const ClientError& error) {
      expectations_.deletion_observed(actions.key, deletion.name);
      const auto* api_error = dynamic_cast<const ApiError*>(&error);
      // Gone already, or the name now belongs to a newer pod (uid precondition): nothing to do.
      if (api_error != nullptr && (api_error->is_not_found() || api_error->is_conflict())) {
        log(LogLevel::kInfo, actions.key, "Pod " + deletion.name + " is gone already");
        continue;
      }
      actions.failed = true;
      log(LogLevel::kError, actions.key,
          "cannot delete Pod " + deletion.name + ": " + describe(error));
      recorder_.warning(job, "FailedDelete",
                        "Error deleting Pod " + deletion.name + ": " + describe(error));
    }
  }
}

void FiberJobController::write_status(const json& job, const JobSpec& spec,
                                      const ReconcilePlan& plan, Actions& actions) {
  if (plan.status == job.value("status", json::object())) return;
  json updated = job;
  updated["status"] = plan.status;
  try {
    client_.replace_status(fiberjobs_ref(spec.ns), updated);
    expectations_.expect_newer_job(actions.key, metadata_field(job, "resourceVersion"));
    log(LogLevel::kInfo, actions.key,
        "status written: phase " + plan.status.value("phase", std::string("?")));
  } catch (const ApiError& error) {
    if (error.is_not_found()) return;
    if (error.is_conflict()) {
      log(LogLevel::kInfo, actions.key, "status write met a newer version; requeued");
      actions.conflict = true;
      return;
    }
    actions.failed = true;
    log(LogLevel::kError, actions.key, "cannot write status: " + describe(error));
  } catch (const ClientError& error) {
    actions.failed = true;
    log(LogLevel::kError, actions.key, "cannot write status: " + describe(error));
  }
}

void FiberJobController::delete_job(const json& job, const JobSpec& spec, Actions& actions) {
  DeleteOptions options;
  options.precondition_uid = spec.uid;
  options.propagation_policy = "Background";
  try {
    client_.remove(fiberjobs_ref(spec.ns), spec.name, options);
    log(LogLevel::kInfo, actions.key, "deleted the job: ttlSecondsAfterFinished passed");
  } catch (const ApiError& error) {
    if (error.is_not_found() || error.is_conflict()) return;
    actions.failed = true;
    log(LogLevel::kError, actions.key, "cannot delete the job: " + describe(error));
    recorder_.warning(job, "FailedDelete", "Error deleting the finished job: " + describe(error));
  } catch (const ClientError& error) {
    actions.failed = true;
    log(LogLevel::kError, actions.key, "cannot delete the job: " + describe(error));
  }
}

void FiberJobController::log(LogLevel level, const std::string& key,
                             const std::string& message) const {
  log_to(options_.log, level, "job=" + key + " " + message);
}

}  // namespace fiber::k8s::controller
