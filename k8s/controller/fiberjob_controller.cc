#include "k8s/controller/fiberjob_controller.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "k8s/client/errors.h"
#include "k8s/client/json_fields.h"
#include "k8s/client/resource_ref.h"
#include "k8s/controller/name_service_uri.h"
#include "k8s/controller/object_names.h"
#include "k8s/controller/pod_view.h"

namespace fiber::k8s::controller {
namespace {

using nlohmann::json;

// How long a worker waits for a key before it looks whether it should stop.
constexpr std::chrono::milliseconds kWorkerPollInterval{200};
// How soon a job put back while the lead is in doubt is looked at again.
constexpr std::chrono::milliseconds kLeadCheckRetry{500};
// When to look again at a job skipped while the cache catches up with the controller's own actions.
constexpr std::chrono::seconds kCacheWaitRequeue{30};
// How long a join-token Secret found present is trusted before it is read again (one GET per
// running job and period).
constexpr std::chrono::seconds kSecretRecheck{15};

// The key of the job an owned object belongs to, from its job-name label; "" when unlabelled.
std::string job_key_of(const json& object) {
  const std::string job = label_value(object, kJobNameLabel);
  return job.empty() ? std::string() : object_key(metadata_field(object, "namespace"), job);
}

bool has_deletion_timestamp(const json& object) {
  const json::json_pointer pointer("/metadata/deletionTimestamp");
  return object.contains(pointer) && !object.at(pointer).is_null();
}

// The resource of the objects of `kind` the controller creates for a job, in namespace `ns`.
ResourceRef ref_of_kind(const std::string& kind, const std::string& ns) {
  if (kind == "Service") return services_ref(ns);
  if (kind == "ConfigMap") return ResourceRef{"", "v1", "configmaps", ns};
  if (kind == "ServiceAccount") return ResourceRef{"", "v1", "serviceaccounts", ns};
  if (kind == "Role") return ResourceRef{"rbac.authorization.k8s.io", "v1", "roles", ns};
  if (kind == "RoleBinding") {
    return ResourceRef{"rbac.authorization.k8s.io", "v1", "rolebindings", ns};
  }
  if (kind == "Secret") return ResourceRef{"", "v1", "secrets", ns};
  if (kind == "NetworkPolicy") {
    return ResourceRef{"networking.k8s.io", "v1", "networkpolicies", ns};
  }
  return pods_ref(ns);
}

ResourceRef ref_of(const json& object, const std::string& ns) {
  return ref_of_kind(object.value("kind", "Pod"), ns);
}

// Kinds an informer of the controller watches: their creations are expected in its cache.
bool is_watched_kind(const std::string& kind) {
  return kind == "Pod" || kind == "Service" || kind == "ConfigMap" || kind == "ServiceAccount" ||
         kind == "Role" || kind == "RoleBinding" || kind == "NetworkPolicy";
}

// Thrown when a pass finds, before a write, that this controller may no longer lead.
class LeadLost : public std::runtime_error {
 public:
  LeadLost() : std::runtime_error("the lead may be lost; the pass stops before its next write") {}
};

std::string describe(const std::exception& error) { return error.what(); }

}  // namespace

// What went wrong while a plan was applied.
struct FiberJobController::Actions {
  std::string key;
  bool failed = false;
  bool conflict = false;
  /// A create met an object of someone else holding the job's name.
  bool name_conflict = false;
};

FiberJobController::FiberJobController(ApiClient& client, EventRecorder& recorder,
                                       ControllerMetrics& metrics, ControllerOptions options)
    : client_(client), recorder_(recorder), metrics_(metrics), options_(std::move(options)) {
  if (options_.workers < 1) throw std::invalid_argument("the controller needs at least 1 worker");
  auto informer_options = [&](ResourceRef ref, bool owned, bool labelled_only = true) {
    InformerOptions informer;
    informer.ref = std::move(ref);
    if (owned) {
      if (labelled_only) informer.label_selector = std::string(kJobNameLabel);
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
  config_maps_ = std::make_unique<Informer>(
      client_, informer_options(ref_of_kind("ConfigMap", options_.watch_namespace), true));
  service_accounts_ = std::make_unique<Informer>(
      client_, informer_options(ref_of_kind("ServiceAccount", options_.watch_namespace), true));
  roles_ = std::make_unique<Informer>(
      client_, informer_options(ref_of_kind("Role", options_.watch_namespace), true));
  role_bindings_ = std::make_unique<Informer>(
      client_, informer_options(ref_of_kind("RoleBinding", options_.watch_namespace), true));
  // Every NetworkPolicy, not only the jobs': one of the namespace's may isolate the egress of a
  // job's pods (see ensure_egress in reconcile.cc).
  network_policies_ = std::make_unique<Informer>(
      client_,
      informer_options(ref_of_kind("NetworkPolicy", options_.watch_namespace), true, false));
  register_handlers();
}

FiberJobController::~FiberJobController() { stop(); }

std::vector<Informer*> FiberJobController::owned_informers() const {
  return {pods_.get(),  services_.get(),      config_maps_.get(),     service_accounts_.get(),
          roles_.get(), role_bindings_.get(), network_policies_.get()};
}

std::vector<Informer*> FiberJobController::informers() const {
  std::vector<Informer*> all = {jobs_.get()};
  for (Informer* owned : owned_informers()) all.push_back(owned);
  return all;
}

void FiberJobController::register_handlers() {
  jobs_->on_add([this](const json& job) { queue_.add(fiber::k8s::object_key(job)); });
  jobs_->on_update(
      [this](const json&, const json& job) { queue_.add(fiber::k8s::object_key(job)); });
  jobs_->on_delete([this](const json& job) {
    const std::string key = fiber::k8s::object_key(job);
    expectations_.forget(key);
    {
      std::lock_guard lock(foreign_mutex_);
      foreign_by_job_.erase(key);
    }
    {
      std::lock_guard lock(shortfall_mutex_);
      shortfall_since_.erase(key);
    }
    {
      std::lock_guard lock(secrets_mutex_);
      secret_seen_.erase(key);
    }
    {
      std::lock_guard lock(refused_mutex_);
      refused_by_job_.erase(key);
    }
    queue_.add(key);
  });
  // A policy of no job (a namespace's default deny, added, changed or removed) concerns every job
  // of its namespace.
  const auto enqueue_jobs_of_namespace = [this](const json& policy) {
    if (!label_value(policy, kJobNameLabel).empty()) return;
    const std::string ns = metadata_field(policy, "namespace");
    for (const json& job : jobs_->list())
      if (metadata_field(job, "namespace") == ns) queue_.add(fiber::k8s::object_key(job));
  };
  network_policies_->on_add(enqueue_jobs_of_namespace);
  network_policies_->on_update([enqueue_jobs_of_namespace](const json&, const json& policy) {
    enqueue_jobs_of_namespace(policy);
  });
  network_policies_->on_delete(enqueue_jobs_of_namespace);
  for (Informer* owned : owned_informers()) {
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

std::vector<EgressPeer> FiberJobController::api_server_endpoints() {
  constexpr auto kRereadAfter = std::chrono::minutes(1);
  std::lock_guard lock(endpoints_mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (endpoints_read_ && now - *endpoints_read_ < kRereadAfter) return endpoints_;
  endpoints_read_ = now;
  try {
    endpoints_ = egress_peers_of_endpoint_slice(client_.get(
        ResourceRef{"discovery.k8s.io", "v1", "endpointslices", "default"}, "kubernetes"));
    endpoints_error_.clear();
  } catch (const std::exception& e) {
    // The last addresses read stay in use; a controller bound in one namespace cannot read them
    // at all, and is told once how to give them.
    const std::string error = e.what();
    if (error != endpoints_error_) {
      log_to(options_.log, LogLevel::kWarning,
             "cannot read the API server's endpoints (EndpointSlice default/kubernetes: " + error +
                 "); where a namespace isolates egress, give them with --api-server-egress");
    }
    endpoints_error_ = error;
  }
  return endpoints_;
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
  for (Informer* informer : informers()) informer->start();
}

bool FiberJobController::caches_synced() const {
  for (const Informer* informer : informers()) {
    if (!informer->has_synced()) return false;
  }
  return true;
}

bool FiberJobController::wait_for_sync(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const Informer* informer : informers()) {
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
  for (Informer* informer : informers()) informer->stop();
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
  } catch (const LeadLost&) {
    log(LogLevel::kWarning, key, "the lead may be lost: the pass stopped before its next write");
    queue_.add_after(key, kLeadCheckRetry);
    queue_.done(key);
    return;
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

void FiberJobController::ensure_leading() const {
  if (still_leading_ && !still_leading_()) throw LeadLost();
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
  observed.foreign_objects = foreign_objects_of(key, spec);
  if (const std::optional<json> service = services_->get(ns, service_name(name))) {
    observed.service_exists = true;
    if (!is_controlled_by(*service, spec.uid)) {
      observed.foreign_objects.push_back(
          ForeignObject{"Service", service_name(name), describe_controller(*service)});
    }
  }
  // Someone else's ConfigMap of that name is in the way only of a job that has a spec.config.
  if (const std::optional<json> config_map = config_maps_->get(ns, config_map_name(name))) {
    if (is_controlled_by(*config_map, spec.uid)) {
      observed.config_map = *config_map;
    } else if (spec.config) {
      observed.foreign_objects.push_back(
          ForeignObject{"ConfigMap", config_map_name(name), describe_controller(*config_map)});
    }
  }
  // The launcher's account and what it may do: a missing one is created again (someone else's of
  // that name is met by the create, which records it as in the way).
  const std::string account = launcher_account_name(name);
  auto ours = [&](const Informer& informer, const std::string& object) {
    const std::optional<json> found = informer.get(ns, object);
    return found && is_controlled_by(*found, spec.uid);
  };
  observed.launcher_access = {.service_account = ours(*service_accounts_, account),
                              .role = ours(*roles_, account),
                              .role_binding = ours(*role_bindings_, account)};
  if (observed.launcher_access.role) observed.launcher_role = *roles_->get(ns, account);
  // The join token and the NetworkPolicy likewise (a token someone else chose is no secret of
  // the job's: its Secret in the way stops the job as any object in the way does).
  observed.isolation = {.join_token_secret = join_token_secret_is_ours(spec, key),
                        .network_policy = ours(*network_policies_, network_policy_name(name))};
  for (const json& policy : network_policies_->list(ns)) {
    if (is_controlled_by(policy, spec.uid)) {
      if (metadata_field(policy, "name") == egress_network_policy_name(name))
        observed.egress_policy = policy;
    } else {
      for (std::string& role : job_roles_with_egress_isolated(policy, spec))
        observed.egress_isolated_roles.push_back(std::move(role));
    }
  }
  std::sort(observed.egress_isolated_roles.begin(), observed.egress_isolated_roles.end());
  observed.egress_isolated_roles.erase(
      std::unique(observed.egress_isolated_roles.begin(), observed.egress_isolated_roles.end()),
      observed.egress_isolated_roles.end());
  // The program's release list; someone else's ConfigMap of that name is in the way.
  if (const std::optional<json> release = config_maps_->get(ns, release_config_map_name(name))) {
    if (is_controlled_by(*release, spec.uid)) {
      observed.release_config_map = *release;
    } else {
      observed.foreign_objects.push_back(
          ForeignObject{"ConfigMap", release_config_map_name(name), describe_controller(*release)});
    }
  }
  {
    std::lock_guard lock(refused_mutex_);
    if (const auto found = refused_by_job_.find(key); found != refused_by_job_.end()) {
      observed.refused_creations = found->second;
    }
  }
  observed.now = std::chrono::system_clock::now();
  {
    std::lock_guard lock(shortfall_mutex_);
    if (const auto found = shortfall_since_.find(key); found != shortfall_since_.end()) {
      observed.unexplained_shortfall_since = found->second;
    }
  }
  ReconcileSettings settings = options_.reconcile;
  if (!observed.egress_isolated_roles.empty() && settings.api_server_egress.empty())
    settings.api_server_egress = api_server_endpoints();
  ReconcilePlan plan = reconcile(spec, observed, settings);
  if (plan.read_name_service_log) {
    observed.name_service_uri_from_log = read_name_service_uri(spec);
    if (observed.name_service_uri_from_log) plan = reconcile(spec, observed, settings);
  }
  {
    std::lock_guard lock(shortfall_mutex_);
    if (plan.unexplained_shortfall) {
      shortfall_since_.try_emplace(key, observed.now);
    } else {
      shortfall_since_.erase(key);
    }
  }

  Actions actions{key};
  apply_creations(*job, spec, plan, actions);
  if (actions.name_conflict) {
    // The next pass sees the object that holds the name and says so in the status.
    return {ReconcileResult::kOk, std::chrono::seconds(1)};
  }
  apply_updates(*job, spec, plan, actions);
  apply_deletions(*job, spec, plan, actions);
  write_status(*job, spec, plan, actions);
  // Events about the job come with the status that records them: a refused status write is
  // decided again by the next pass, which would otherwise record them twice.
  if (!actions.failed && !actions.conflict) {
    for (const JobEvent& event : plan.events) {
      log(event.warning ? LogLevel::kWarning : LogLevel::kInfo, key,
          event.reason + ": " + event.message);
      recorder_.record(*job, event.warning ? EventType::kWarning : EventType::kNormal, event.reason,
                       event.message);
    }
  }
  if (plan.delete_job) delete_job(*job, spec, actions);

  KeyOutcome outcome;
  outcome.requeue_after = plan.requeue_after;
  // No watch tells of the join-token Secret's deletion: a job still running is looked at again
  // when the Secret found is due to be read again, so one deleted by hand is made again.
  const std::string phase = string_field(plan.status, "phase");
  if (!plan.delete_job && !spec.being_deleted && phase != "Succeeded" && phase != "Failed" &&
      (!outcome.requeue_after || *outcome.requeue_after > kSecretRecheck)) {
    outcome.requeue_after = kSecretRecheck;
  }
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

std::vector<ForeignObject> FiberJobController::foreign_objects_of(const std::string& key,
                                                                  const JobSpec& spec) {
  std::vector<ForeignObject> remembered;
  {
    std::lock_guard lock(foreign_mutex_);
    auto it = foreign_by_job_.find(key);
    if (it == foreign_by_job_.end()) return {};
    remembered = it->second;
  }
  // Looked up again each pass: once the object is gone (or handed to the job), the job goes on.
  std::vector<ForeignObject> still_there;
  for (const ForeignObject& object : remembered) {
    try {
      const json found = client_.get(ref_of_kind(object.kind, spec.ns), object.name);
      if (!is_controlled_by(found, spec.uid)) {
        still_there.push_back(ForeignObject{object.kind, object.name, describe_controller(found)});
      }
    } catch (const ApiError& error) {
      if (!error.is_not_found()) still_there.push_back(object);
    } catch (const ClientError&) {
      still_there.push_back(object);
    }
  }
  std::lock_guard lock(foreign_mutex_);
  if (still_there.empty()) {
    foreign_by_job_.erase(key);
  } else {
    foreign_by_job_[key] = still_there;
  }
  return still_there;
}

bool FiberJobController::join_token_secret_is_ours(const JobSpec& spec, const std::string& key) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(secrets_mutex_);
    const auto seen = secret_seen_.find(key);
    if (seen != secret_seen_.end() && now - seen->second < kSecretRecheck) return true;
  }
  bool ours = false;
  try {
    ours = is_controlled_by(
        client_.get(ref_of_kind("Secret", spec.ns), join_token_secret_name(spec.name)), spec.uid);
  } catch (const ApiError& error) {
    if (!error.is_not_found()) throw;
  }
  std::lock_guard lock(secrets_mutex_);
  if (ours) {
    secret_seen_[key] = now;
  } else {
    secret_seen_.erase(key);
  }
  return ours;
}

// A create met AlreadyExists: whose is the object? Returns true when it is the job's own.
bool FiberJobController::existing_object_is_ours(const JobSpec& spec, const std::string& key,
                                                 const std::string& kind, const std::string& name) {
  json found;
  try {
    found = client_.get(ref_of_kind(kind, spec.ns), name);
  } catch (const ApiError& error) {
    if (error.is_not_found()) return true;  // gone meanwhile: the next pass creates it
    throw;
  }
  if (is_controlled_by(found, spec.uid)) return true;
  std::lock_guard lock(foreign_mutex_);
  std::vector<ForeignObject>& known = foreign_by_job_[key];
  const ForeignObject object{kind, name, describe_controller(found)};
  if (std::find(known.begin(), known.end(), object) == known.end()) known.push_back(object);
  return false;
}

void FiberJobController::apply_creations(const json& job, const JobSpec& spec,
                                         const ReconcilePlan& plan, Actions& actions) {
  // What this pass's pod creates met, kept for the next pass (ObservedState::refused_creations).
  std::set<std::string> tried_roles = {std::string(kWorkerRole)};
  std::vector<RefusedCreation> refused;
  const auto remember_refusals = [&] {
    std::lock_guard lock(refused_mutex_);
    std::vector<RefusedCreation>& kept = refused_by_job_[actions.key];
    std::erase_if(kept,
                  [&](const RefusedCreation& each) { return tried_roles.contains(each.role); });
    kept.insert(kept.end(), refused.begin(), refused.end());
    if (kept.empty()) refused_by_job_.erase(actions.key);
  };
  for (const json& object : plan.creations) {
    const std::string name = object["metadata"]["name"];
    const std::string kind = object.value("kind", "Pod");
    const bool pod = kind == "Pod";
    const std::string role = pod ? label_value(object, kRoleLabel) : std::string();
    if (pod) tried_roles.insert(role);
    // Expected one by one, just before each call: an exception that ends the pass midway leaves
    // no expectation behind for objects never asked for.
    const bool watched = is_watched_kind(kind);
    ensure_leading();
    if (watched) expectations_.expect_creations(actions.key, {name});
    try {
      // A pod comes from the user's template: a field the server does not know is refused (it
      // would be dropped, and the pod would run without what the user meant) and said in
      // WorkersFailing or the job's failure; what the server warns of becomes an Event.
      const Response created = client_.create_object(
          ref_of(object, spec.ns), object, pod ? Query{{"fieldValidation", "Strict"}} : Query{});
      log(LogLevel::kInfo, actions.key, "created " + kind + " " + name);
      recorder_.normal(job, "SuccessfulCreate", "Created " + kind + ": " + name);
      for (const std::string& warning : created.warnings) {
        log(LogLevel::kWarning, actions.key, "creating " + kind + " " + name + ": " + warning);
        recorder_.warning(job, "CreateWarning", "Creating " + kind + " " + name + ": " + warning);
      }
    } catch (const ClientError& error) {
      // Nothing will appear for a create that failed: expect it no more.
      if (watched) expectations_.creation_observed(actions.key, name);
      const auto* api_error = dynamic_cast<const ApiError*>(&error);
      if (api_error != nullptr && api_error->is_already_exists()) {
        if (!existing_object_is_ours(spec, actions.key, kind, name)) {
          log(LogLevel::kWarning, actions.key,
              kind + " " + name + " exists and is not controlled by the job");
          actions.name_conflict = true;
          remember_refusals();
          return;
        }
        log(LogLevel::kInfo, actions.key, kind + " " + name + " exists already");
        continue;
      }
      if (pod && api_error != nullptr) {
        refused.push_back(RefusedCreation{role, name, api_error->code(), api_error->message()});
      }
      actions.failed = true;
      log(LogLevel::kError, actions.key,
          "cannot create " + kind + " " + name + ": " + describe(error));
      recorder_.warning(job, "FailedCreate",
                        "Error creating " + kind + " " + name + ": " + describe(error));
    } catch (...) {
      if (watched) expectations_.creation_observed(actions.key, name);
      remember_refusals();
      throw;
    }
  }
  remember_refusals();
}

void FiberJobController::apply_updates(const json& job, const JobSpec& spec,
                                       const ReconcilePlan& plan, Actions& actions) {
  for (const json& object : plan.updates) {
    const std::string name = object["metadata"]["name"];
    const std::string kind = object.value("kind", "ConfigMap");
    ensure_leading();
    try {
      client_.replace(ref_of(object, spec.ns), object);
      log(LogLevel::kInfo, actions.key, "updated " + kind + " " + name);
      recorder_.normal(job, "SuccessfulUpdate", "Updated " + kind + ": " + name);
    } catch (const ApiError& error) {
      if (error.is_conflict() || error.is_not_found()) {
        actions.conflict = true;
        log(LogLevel::kInfo, actions.key, kind + " " + name + " changed meanwhile; requeued");
        continue;
      }
      actions.failed = true;
      log(LogLevel::kError, actions.key,
          "cannot update " + kind + " " + name + ": " + describe(error));
      recorder_.warning(job, "FailedUpdate",
                        "Error updating " + kind + " " + name + ": " + describe(error));
    } catch (const ClientError& error) {
      actions.failed = true;
      log(LogLevel::kError, actions.key,
          "cannot update " + kind + " " + name + ": " + describe(error));
    }
  }
}

void FiberJobController::apply_deletions(const json& job, const JobSpec& spec,
                                         const ReconcilePlan& plan, Actions& actions) {
  for (const PodDeletion& deletion : plan.deletions) {
    DeleteOptions options;
    options.precondition_uid = deletion.uid;
    ensure_leading();
    expectations_.expect_deletions(actions.key, {deletion.name});
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
    } catch (...) {
      expectations_.deletion_observed(actions.key, deletion.name);
      throw;
    }
  }
  for (const ObjectDeletion& deletion : plan.object_deletions) {
    DeleteOptions options;
    options.precondition_uid = deletion.uid;
    ensure_leading();
    const std::string what = deletion.kind + " " + deletion.name;
    try {
      client_.remove(ref_of_kind(deletion.kind, spec.ns), deletion.name, options);
      log(LogLevel::kInfo, actions.key, "deleted " + what + " (" + deletion.reason + ")");
      recorder_.normal(job, "SuccessfulDelete", "Deleted " + what + " (" + deletion.reason + ")");
    } catch (const ClientError& error) {
      const auto* api_error = dynamic_cast<const ApiError*>(&error);
      if (api_error != nullptr && (api_error->is_not_found() || api_error->is_conflict())) continue;
      actions.failed = true;
      log(LogLevel::kError, actions.key, "cannot delete " + what + ": " + describe(error));
      recorder_.warning(job, "FailedDelete", "Error deleting " + what + ": " + describe(error));
    }
  }
}

void FiberJobController::write_status(const json& job, const JobSpec& spec,
                                      const ReconcilePlan& plan, Actions& actions) {
  if (plan.status == job.value("status", json::object())) return;
  json updated = job;
  updated["status"] = plan.status;
  ensure_leading();
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
  ensure_leading();
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
