#include "k8s/controller/reconcile.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>

#include "k8s/client/json_fields.h"
#include "k8s/controller/conditions.h"
#include "k8s/controller/job_config_map.h"
#include "k8s/controller/launcher_access.h"
#include "k8s/controller/object_names.h"
#include "k8s/controller/pod_view.h"
#include "k8s/controller/release_list.h"

namespace fiber::k8s::controller {
namespace {

using nlohmann::json;
namespace type = condition_type;

// How soon to look at the name-service log again when the URI is not printed yet.
constexpr std::chrono::seconds kUriPollInterval{1};

// How a job ends when it ends in this pass.
struct Outcome {
  bool succeeded = false;
  std::string reason;
  std::string message;
};

std::int64_t integer_at(const json& object, const json::json_pointer& pointer) {
  if (!object.contains(pointer) || !object.at(pointer).is_number_integer()) return 0;
  return object.at(pointer).get<std::int64_t>();
}

// Names a message lists before it says "and N more".
constexpr std::size_t kMaxNamesInMessage = 10;
// A condition's message is at most 32 KiB (the API's limit); ours stay below it.
constexpr std::size_t kMaxConditionMessageBytes = 32 * 1024 - 1;

// "a, b, c" with at most `limit` items, then "and N more".
std::string capped_list(const std::vector<std::string>& items, std::size_t limit) {
  std::string text;
  for (std::size_t i = 0; i < items.size() && i < limit; ++i) {
    text += (i == 0 ? "" : ", ") + items[i];
  }
  if (items.size() > limit) text += " and " + std::to_string(items.size() - limit) + " more";
  return text;
}

// The end of a launcher's termination message shown in the job's Failed condition: a log's last
// lines say most about why the program failed.
constexpr std::size_t kMaxTerminationMessageBytes = 1024;

// The last `limit` bytes of `text` (from a UTF-8 character boundary, marked "..."), without the
// whitespace around it.
std::string tail_of(std::string text, std::size_t limit) {
  const auto last = text.find_last_not_of(" \t\r\n");
  text.erase(last == std::string::npos ? 0 : last + 1);
  const auto first = text.find_first_not_of(" \t\r\n");
  text.erase(0, first == std::string::npos ? text.size() : first);
  if (text.size() <= limit) return text;
  std::size_t start = text.size() - limit;
  while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
  return "..." + text.substr(start);
}

// `text` cut to at most `limit` bytes at a UTF-8 character boundary, marked with "..." when cut.
std::string truncated(std::string text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t end = limit - 3;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  return text + "...";
}

std::string plural_pods(std::size_t count) {
  return std::to_string(count) + (count == 1 ? " worker pod" : " worker pods");
}

// One pass over one job: the observed pods sorted by role, the status being built, the plan.
class Pass {
 public:
  struct WorkerCounts {
    std::int64_t ready = 0;
  };

  Pass(const JobSpec& job, const ObservedState& observed, const ReconcileSettings& settings)
      : job_(job), observed_(observed), settings_(settings), now_(format_time(observed.now)) {
    // Released pods: named by people in spec.workers.workersToDelete, or by the program in its
    // release ConfigMap.
    to_delete_ = job.workers_to_delete;
    for (const std::string& name :
         parse_release_list(observed.release_config_map, refused_release_lines_))
      to_delete_.insert(name);
    requested_by_program_ =
        parse_requested_workers(observed.release_config_map, refused_release_lines_);
    plan_.status = observed.status.is_object() ? observed.status : json::object();
    for (const json& pod : observed.pods) {
      PodView view = view_pod(pod);
      taken_names_.insert(view.name);
      if (!is_controlled_by(pod, job.uid)) {
        if (view.name == name_service_pod_name(job.name) ||
            view.name == launcher_pod_name(job.name)) {
          foreign_.push_back(ForeignObject{"Pod", view.name, describe_controller(pod)});
        }
        continue;
      }
      if (view.name == name_service_pod_name(job.name)) {
        name_service_ = view;
      } else if (view.name == launcher_pod_name(job.name)) {
        launcher_ = view;
      } else if (view.role == kWorkerRole && view.worker_index) {
        workers_.push_back(view);
      } else {
        others_.push_back(view);
      }
    }
    foreign_.insert(foreign_.end(), observed.foreign_objects.begin(),
                    observed.foreign_objects.end());
    std::sort(workers_.begin(), workers_.end(),
              [](const PodView& a, const PodView& b) { return *a.worker_index < *b.worker_index; });
  }

  ReconcilePlan run() {
    if (job_.being_deleted) return std::move(plan_);
    status()["observedGeneration"] = job_.generation;
    const json previous_conditions = conditions();
    if (condition_is_true(conditions(), type::kSucceeded) ||
        condition_is_true(conditions(), type::kFailed)) {
      finish(std::nullopt);
    } else {
      if (job_.suspend) {
        suspend();
      } else {
        run_active();
      }
      check_names();
    }
    record_transition_events(previous_conditions);
    return std::move(plan_);
  }

 private:
  json& status() { return plan_.status; }
  json& conditions() { return plan_.status["conditions"]; }

  void set(std::string_view condition_type, bool value, std::string reason, std::string message) {
    set_condition(conditions(),
                  Condition{condition_type, value, std::move(reason),
                            truncated(std::move(message), kMaxConditionMessageBytes)},
                  job_.generation, now_);
  }

  void requeue_after(std::chrono::seconds delay) {
    delay = std::max(delay, std::chrono::seconds(1));
    if (!plan_.requeue_after || delay < *plan_.requeue_after) plan_.requeue_after = delay;
  }

  void delete_pod(const PodView& pod, std::string reason) {
    plan_.deletions.push_back(PodDeletion{pod.name, pod.uid, std::move(reason)});
  }

  bool deleting(const PodView& pod) const {
    return std::any_of(plan_.deletions.begin(), plan_.deletions.end(),
                       [&](const PodDeletion& deletion) { return deletion.uid == pod.uid; });
  }

  template <typename Visit>
  void for_each_pod(Visit visit) const {
    if (name_service_) visit(*name_service_);
    if (launcher_) visit(*launcher_);
    for (const PodView& pod : workers_) visit(pod);
    for (const PodView& pod : others_) visit(pod);
  }

  // Objects of someone else holding the job's names: the job creates nothing while there is one
  // (its creation would meet AlreadyExists and the job would wait without a word), and says why.
  void check_names() {
    if (foreign_.empty()) {
      if (condition_is_true(conditions(), type::kNameConflict)) {
        set(type::kNameConflict, false, "NamesFree", "no other object holds the job's names");
      }
      return;
    }
    if (condition_is_true(conditions(), type::kSucceeded) ||
        condition_is_true(conditions(), type::kFailed)) {
      return;
    }
    std::vector<std::string> held;
    for (const ForeignObject& object : foreign_) {
      held.push_back(object.kind + " " + object.name + " (" + object.controller + ")");
    }
    plan_.creations.clear();
    plan_.updates.clear();
    set(type::kNameConflict, true, "ObjectNotOwned",
        "the job waits: " + capped_list(held, kMaxNamesInMessage) +
            (held.size() == 1 ? " holds one of its names and is" : " hold its names and are") +
            " not controlled by it; delete or rename them");
  }

  // spec.config lives in ConfigMap NAME-config, created before any pod mounts it and rewritten
  // when spec.config changes (mounted files follow within the kubelet's sync period).
  void ensure_config_map() {
    if (!job_.config) return;
    if (!observed_.config_map.is_object()) {
      plan_.creations.push_back(build_config_map(job_));
    } else if (!config_map_is_current(observed_.config_map, job_)) {
      json updated = observed_.config_map;
      updated["data"] = build_config_map(job_)["data"];
      plan_.updates.push_back(std::move(updated));
    }
  }

  void ensure_service() {
    if (!observed_.service_exists) plan_.creations.push_back(build_service(job_));
    set(type::kCreated, true, "ServiceCreated",
        "the job was accepted and its Service " + service_name(job_.name) + " created");
  }

  // spec.runPolicy.suspend: every pod goes, the job and its Service stay.
  void suspend() {
    ensure_service();
    for_each_pod([&](const PodView& pod) {
      if (!pod.being_deleted) delete_pod(pod, "the job is suspended");
    });
    const std::string why = "the job is suspended";
    set(type::kSuspended, true, "Suspended", "spec.runPolicy.suspend is true");
    set(type::kNameServiceReady, false, "Suspended", why);
    set(type::kLauncherRunning, false, "Suspended", why);
    set(type::kWorkersReady, false, "Suspended", why);
    // As a batch Job does, the clock of activeDeadlineSeconds restarts when the job resumes.
    status().erase("startTime");
    status()["nameService"] = json::object();
    status()["launcher"] = json::object();
    status()["phase"] = "Suspended";
    write_worker_counts();
  }

  // The account the launcher runs as, and what it may do: created before the launcher pod (the
  // creations of a plan are made in order), and again in any pass that finds one missing (a
  // create that failed, one deleted by hand): without them the program gets 403 from the API.
  // Lines of the release list that are no pod name: a warning in each pass of a running job
  // (the recorder counts repeats into one Event).
  void report_refused_release_lines() {
    for (const std::string& why : refused_release_lines_) {
      plan_.events.push_back(JobEvent{true, "InvalidReleaseList",
                                      "ConfigMap " + release_config_map_name(job_.name) + ": " +
                                          why + "; the line is ignored"});
    }
  }

  void ensure_launcher_access() {
    // The release list first: the launcher's Role names it, and the program writes it.
    if (!observed_.release_config_map.is_object())
      plan_.creations.push_back(build_release_config_map(job_));
    const LauncherAccess& access = observed_.launcher_access;
    if (!access.service_account) plan_.creations.push_back(build_launcher_service_account(job_));
    if (!access.role) {
      plan_.creations.push_back(build_launcher_role(job_));
    } else if (observed_.launcher_role.is_object()) {
      // A Role made by an older controller may grant more than this one does (the launcher once
      // had patch on its whole job) or less than the program now needs: its rules are the
      // controller's, replaced at the resourceVersion read.
      json rules = build_launcher_role(job_)["rules"];
      if (observed_.launcher_role.value("rules", json()) != rules) {
        json updated = observed_.launcher_role;
        updated["rules"] = std::move(rules);
        // The items of a list come without their kind (a real API server leaves TypeMeta out).
        updated["kind"] = "Role";
        updated["apiVersion"] = "rbac.authorization.k8s.io/v1";
        plan_.updates.push_back(std::move(updated));
      }
    }
    if (!access.role_binding) plan_.creations.push_back(build_launcher_role_binding(job_));
  }

  // The job's join token and NetworkPolicy: the token before any pod that mounts it (a pod whose
  // Secret is missing does not start), both again in any pass that finds one missing. A token
  // made again differs from the one the running pods hold: pods started after that are refused
  // by a launcher started before (the Secret is deleted only by hand).
  void ensure_isolation() {
    if (!observed_.isolation.join_token_secret) {
      plan_.creations.push_back(build_join_token_secret(job_, settings_.new_join_token()));
    }
    if (!observed_.isolation.network_policy) plan_.creations.push_back(build_network_policy(job_));
    ensure_egress();
  }

  // Egress: NetworkPolicies add up, and one that names Egress isolates the pods it selects. So
  // the job's egress policy exists exactly while another policy isolates its pods' egress (a
  // namespace's default deny): there it lets them reach each other, DNS and the API server; made
  // anywhere else it would cut them off from everything else.
  void ensure_egress() {
    const json& found = observed_.egress_policy;
    if (observed_.egress_isolated_roles.empty()) {
      if (found.is_object()) {
        plan_.object_deletions.push_back(
            ObjectDeletion{"NetworkPolicy", egress_network_policy_name(job_.name),
                           found.value("metadata", json::object()).value("uid", ""),
                           "no other NetworkPolicy isolates the egress of the job's pods"});
      }
      return;
    }
    const json wanted = build_egress_network_policy(job_, observed_.egress_isolated_roles,
                                                    settings_.api_server_egress);
    if (!found.is_object()) {
      plan_.creations.push_back(wanted);
    } else if (found.value("spec", json()) != wanted["spec"]) {
      json updated = found;  // at the resourceVersion read
      updated["spec"] = wanted["spec"];
      updated["kind"] = wanted["kind"];
      updated["apiVersion"] = wanted["apiVersion"];
      plan_.updates.push_back(std::move(updated));
    }
    if (settings_.api_server_egress.empty()) {
      plan_.events.push_back(JobEvent{
          true, "NoApiServerEgress",
          "a NetworkPolicy of namespace " + job_.ns +
              " isolates the egress of the job's pods, and the controller does not know the API "
              "server's endpoints (it could not read EndpointSlice default/kubernetes, "
              "or found no ready endpoint there): the launcher cannot ask for worker pods; run "
              "the controller with --api-server-egress ADDRESS:PORT"});
    }
  }

  void run_active() {
    ensure_service();
    ensure_config_map();
    ensure_launcher_access();
    ensure_isolation();
    report_refused_release_lines();
    if (condition_is_true(conditions(), type::kSuspended)) {
      set(type::kSuspended, false, "Resumed", "spec.runPolicy.suspend is false");
    }
    if (!status().contains("startTime") || !status()["startTime"].is_string()) {
      status()["startTime"] = now_;
    }
    if (previous_run_still_terminating()) return;
    std::optional<Outcome> outcome = observe_launcher_end();
    if (!outcome) outcome = refused_as_invalid();
    if (!outcome) outcome = check_deadline();
    const std::string uri = outcome ? std::string() : reconcile_name_service(outcome);
    if (!outcome) outcome = reconcile_workers(uri);
    if (outcome) {
      finish(outcome);
      return;
    }
    reconcile_launcher(uri);
    write_phase();
  }

  // Just resumed (the suspension cleared status.launcher), the name service and launcher of the
  // run before it may still be in their grace period. They are not this run's: their end is not the
  // job's end, and their names are not free yet. Wait for them to go.
  bool previous_run_still_terminating() {
    if (launcher_was_seen()) return false;
    const bool launcher_going = launcher_ && launcher_->being_deleted;
    const bool name_service_going =
        name_service_ && name_service_->being_deleted &&
        string_at(status(), json::json_pointer("/nameService/uri")).empty();
    if (!launcher_going && !name_service_going) return false;
    set(type::kLauncherRunning, false, "PreviousRunTerminating",
        "waiting for the pods of the run before the suspension to end");
    status()["phase"] = "Pending";
    write_worker_counts();
    requeue_after(std::chrono::seconds(1));
    return true;
  }

  bool launcher_was_seen() {
    return !string_at(status(), json::json_pointer("/launcher/podName")).empty();
  }

  // The launcher's end is the job's end; so is its pod going away before it ended.
  std::optional<Outcome> observe_launcher_end() {
    if (launcher_) {
      json launcher = {{"podName", launcher_->name}, {"phase", launcher_->phase}};
      if (launcher_->finished() && launcher_->exit_code)
        launcher["exitCode"] = *launcher_->exit_code;
      status()["launcher"] = std::move(launcher);
      if (launcher_->phase == "Succeeded") {
        return Outcome{true, "LauncherSucceeded", "launcher exited with code 0"};
      }
      if (launcher_->phase == "Failed") {
        const std::string code =
            launcher_->exit_code ? std::to_string(*launcher_->exit_code) : std::string("unknown");
        std::string message = "launcher exited with code " + code;
        const std::string why =
            tail_of(launcher_->termination_message, kMaxTerminationMessageBytes);
        if (!why.empty()) message += ": " + why;
        return Outcome{false, "LauncherFailed", std::move(message)};
      }
      if (launcher_->being_deleted) {
        return Outcome{false, "LauncherDeleted",
                       "launcher pod " + launcher_->name + " was deleted before it finished"};
      }
      return std::nullopt;
    }
    if (launcher_was_seen()) {
      const std::string name = string_at(status(), json::json_pointer("/launcher/podName"));
      status()["launcher"]["phase"] = "Unknown";
      return Outcome{false, "LauncherDeleted",
                     "launcher pod " + name + " was deleted before it finished"};
    }
    return std::nullopt;
  }

  // A launcher or name-service pod the API server refused as invalid will be refused again:
  // the job fails with the server's words rather than trying for ever. (A refusal for another
  // reason, a quota or a webhook that is down, is tried again.)
  std::optional<Outcome> refused_as_invalid() {
    for (const RefusedCreation& refused : observed_.refused_creations) {
      if (refused.code != 400 && refused.code != 422) continue;
      if (refused.role == kLauncherRole && !launcher_) {
        return Outcome{
            false, "LauncherRefused",
            "the API server refused launcher pod " + refused.name + ": " + refused.message};
      }
      if (refused.role == kNameServiceRole && !name_service_) {
        return Outcome{
            false, "NameServiceRefused",
            "the API server refused name-service pod " + refused.name + ": " + refused.message};
      }
    }
    return std::nullopt;
  }

  // Worker pods the API server refuses (an invalid template, a quota, a webhook): said in
  // WorkersFailing while it lasts. They are tried again in every pass.
  void report_refused_workers() {
    const auto refused =
        std::find_if(observed_.refused_creations.begin(), observed_.refused_creations.end(),
                     [](const RefusedCreation& each) { return each.role == kWorkerRole; });
    if (refused != observed_.refused_creations.end()) {
      set(type::kWorkersFailing, true, "FailedCreate",
          "the API server refused worker pod " + refused->name + " (" +
              std::to_string(refused->code) + "): " + refused->message);
    } else if (condition_is_true(conditions(), type::kWorkersFailing)) {
      set(type::kWorkersFailing, false, "WorkersCreated", "worker pods are created again");
    }
  }

  std::optional<Outcome> check_deadline() {
    if (!job_.active_deadline_seconds) return std::nullopt;
    const auto started = parse_time(status()["startTime"].get<std::string>());
    if (!started) return std::nullopt;
    const auto deadline = *started + std::chrono::seconds(*job_.active_deadline_seconds);
    if (observed_.now >= deadline) {
      return Outcome{false, "DeadlineExceeded",
                     "the job ran longer than activeDeadlineSeconds (" +
                         std::to_string(*job_.active_deadline_seconds) + " s)"};
    }
    requeue_after(std::chrono::ceil<std::chrono::seconds>(deadline - observed_.now));
    return std::nullopt;
  }

  // Returns the URI once the name service is ready, "" before; sets `outcome` when the name
  // service was lost after the launcher was told its URI (a new one could not reach it).
  std::string reconcile_name_service(std::optional<Outcome>& outcome) {
    const std::string pod_name = name_service_pod_name(job_.name);
    std::string uri = string_at(status(), json::json_pointer("/nameService/uri"));
    const bool lost = !name_service_ || name_service_->finished() || name_service_->being_deleted;
    if (lost && !uri.empty() && (launcher_ || launcher_was_seen())) {
      outcome = Outcome{false, "NameServiceLost",
                        "name-service pod " + pod_name + " was lost while the job ran"};
      return {};
    }
    if (!name_service_) {
      plan_.creations.push_back(build_name_service_pod(job_, settings_.name_service_image));
      status()["nameService"] = {{"podName", pod_name}};
      set(type::kNameServiceReady, false, "NameServiceCreating", "creating pod " + pod_name);
      return {};
    }
    if (lost) {
      if (!name_service_->being_deleted) {
        delete_pod(*name_service_, "the name service ended before the launcher started");
      }
      status()["nameService"] = {{"podName", pod_name}};
      set(type::kNameServiceReady, false, "NameServiceLost",
          "name-service pod " + pod_name + " ended; replacing it");
      return {};
    }
    if (name_service_->phase != "Running") {
      status()["nameService"] = {{"podName", pod_name}};
      set(type::kNameServiceReady, false, "NameServicePending",
          "name-service pod " + pod_name + " is " + name_service_->phase);
      return {};
    }
    if (uri.empty() && observed_.name_service_uri_from_log)
      uri = *observed_.name_service_uri_from_log;
    if (uri.empty()) {
      plan_.read_name_service_log = true;
      requeue_after(kUriPollInterval);
      set(type::kNameServiceReady, false, "WaitingForURI",
          "name-service pod " + pod_name + " runs; its URI is not in its log yet");
      return {};
    }
    status()["nameService"] = {{"podName", pod_name}, {"uri", uri}};
    set(type::kNameServiceReady, true, "NameServiceRunning", "the name service listens at " + uri);
    return uri;
  }

  void reconcile_launcher(const std::string& uri) {
    if (!launcher_) {
      if (!uri.empty()) {
        plan_.creations.push_back(build_launcher_pod(job_, uri));
        set(type::kLauncherRunning, false, "LauncherCreating",
            "creating pod " + launcher_pod_name(job_.name));
      } else {
        set(type::kLauncherRunning, false, "WaitingForNameService",
            "the launcher starts once the name service is ready");
      }
      return;
    }
    if (launcher_->phase == "Running") {
      set(type::kLauncherRunning, true, "LauncherRunning", "pod " + launcher_->name + " runs");
    } else {
      set(type::kLauncherRunning, false, "LauncherPending",
          "pod " + launcher_->name + " is " + launcher_->phase);
    }
  }

  // Lost workers are counted, then (in a later pass) replaced; finished ones deleted to free their
  // names, and the number of live workers brought to the desired count.
  std::optional<Outcome> reconcile_workers(const std::string& uri) {
    const std::int32_t desired = job_.desired_workers(requested_by_program_);
    std::vector<const PodView*> live;
    for (const PodView& pod : workers_) {
      if (pod.live()) live.push_back(&pod);
    }
    // A worker live at the last pass and neither live now, nor removed by a scale-down, nor
    // released by the program (named in workersToDelete) was lost.
    const auto previous_active = integer_at(status(), json::json_pointer("/workers/active"));
    const auto released = newly_released_workers();
    const auto expected_live = std::min<std::int64_t>(previous_active - released, desired);
    const auto lost =
        std::max<std::int64_t>(0, expected_live - static_cast<std::int64_t>(live.size()));
    if (!status().contains("workerReplacements")) status()["workerReplacements"] = 0;
    if (lost > 0) {
      plan_.unexplained_shortfall = true;
      // A pod the program released leaves on its own, with exit code 0: only a Succeeded worker
      // nobody is deleting and not (yet) listed may be a release whose list is still on its way.
      // A failed, deleted or vanished one is a loss now, and its replacement is not held up.
      const bool may_be_released =
          std::any_of(workers_.begin(), workers_.end(), [&](const PodView& pod) {
            return pod.phase == "Succeeded" && !pod.being_deleted && !to_delete_.contains(pod.name);
          });
      const auto since = observed_.unexplained_shortfall_since;
      const auto waited = since ? observed_.now - *since : SystemTime::duration::zero();
      if (may_be_released && (!since || waited < kLossConfirmation)) {
        // Not counted yet, nor replaced, nor the counts written over: a release may still be
        // on its way. The pass after kLossConfirmation decides.
        requeue_after(std::chrono::ceil<std::chrono::seconds>(kLossConfirmation - waited));
        return std::nullopt;
      }
      return count_lost_workers(lost, desired);
    }

    for (const PodView& pod : workers_) {
      if (!pod.live() && !pod.being_deleted) {
        delete_pod(pod, "worker pod " + pod.phase + "; its name is freed for a replacement");
      }
    }
    std::string scale_down_note;
    if (!uri.empty() && static_cast<std::int64_t>(live.size()) < desired) {
      create_workers(desired - static_cast<std::int32_t>(live.size()), uri);
    } else if (static_cast<std::int64_t>(live.size()) > desired) {
      scale_down_note = scale_down(live, static_cast<std::size_t>(live.size() - desired));
    }
    const auto counts = write_worker_counts();
    if (condition_is_true(conditions(), type::kDegraded) && counts.ready >= desired) {
      set(type::kDegraded, false, "WorkersReplaced", "every lost worker pod was replaced");
    }
    report_refused_workers();
    set_workers_ready(counts, desired, uri, scale_down_note);
    return std::nullopt;
  }

  // Worker pods named in workersToDelete that the last pass counted as active and that are no
  // longer live: the program released them, so their end is no loss. status.workers.released
  // lists the named pods a pass did not count as active (gone, finished, or deleted by the
  // controller), so that each released pod is excused once.
  std::int64_t newly_released_workers() {
    std::set<std::string> excused_before;
    const json::json_pointer pointer("/workers/released");
    if (status().contains(pointer) && status().at(pointer).is_array()) {
      for (const json& name : status().at(pointer)) {
        if (name.is_string()) excused_before.insert(name.get<std::string>());
      }
    }
    std::int64_t released = 0;
    for (const std::string& name : to_delete_) {
      if (excused_before.contains(name) || !is_worker_name(name)) continue;
      const bool live = std::any_of(workers_.begin(), workers_.end(), [&](const PodView& pod) {
        return pod.name == name && pod.live();
      });
      if (!live) ++released;
    }
    return released;
  }

  bool is_worker_name(const std::string& name) const {
    const std::string prefix = job_.name + "-worker-";
    return name.starts_with(prefix) &&
           parse_worker_index(std::string_view(name).substr(prefix.size())).has_value();
  }

  // A pass that finds lost workers only counts them: the status write that records the count
  // comes before any replacement, so a refused write (409) cannot lose the count, and the
  // replacements made by the next pass never exceed maxWorkerReplacements unnoticed.
  std::optional<Outcome> count_lost_workers(std::int64_t lost, std::int32_t desired) {
    const auto replacements =
        integer_at(status(), json::json_pointer("/workerReplacements")) + lost;
    status()["workerReplacements"] = replacements;
    if (job_.max_worker_replacements && replacements > *job_.max_worker_replacements) {
      return Outcome{false, "TooManyWorkerReplacements",
                     std::to_string(replacements) +
                         " worker pods were lost, more than maxWorkerReplacements (" +
                         std::to_string(*job_.max_worker_replacements) + ")"};
    }
    // Names for the message: finished pods and pods deleted by someone else, except released ones.
    std::vector<std::string> names;
    for (const PodView& pod : workers_) {
      if (pod.live() || to_delete_.contains(pod.name)) continue;
      names.push_back(pod.name + " (" + (pod.finished() ? pod.phase : std::string("deleted")) +
                      ")");
    }
    std::string message = "lost " + plural_pods(static_cast<std::size_t>(lost));
    // Pods lost at an earlier pass may still be listed (a lost node's pods stay until their
    // kubelet returns), so the names can outnumber this pass's losses.
    if (!names.empty()) {
      message += std::cmp_greater(names.size(), lost) ? " among [" : " [";
      message += capped_list(names, kMaxNamesInMessage) + "]";
    }
    message += "; replacing";
    plan_.events.push_back(JobEvent{true, "WorkerLost", message});
    set(type::kDegraded, true, "WorkerLost", message);
    const auto counts = write_worker_counts();
    set_workers_ready(counts, desired, "", "");
    requeue_after(std::chrono::seconds(1));
    return std::nullopt;
  }

  void set_workers_ready(const WorkerCounts& counts, std::int32_t desired, const std::string& uri,
                         const std::string& scale_down_note) {
    const std::string summary =
        std::to_string(counts.ready) + " of " + std::to_string(desired) + " worker pods ready";
    if (counts.ready == desired) {
      set(type::kWorkersReady, true, "WorkersReady", summary);
    } else if (!scale_down_note.empty()) {
      set(type::kWorkersReady, false, "ScaleDownWaiting", summary + "; " + scale_down_note);
    } else if (uri.empty() && counts.ready < desired &&
               !condition_is_true(conditions(), type::kNameServiceReady)) {
      set(type::kWorkersReady, false, "WaitingForNameService",
          summary + "; workers start once the name service is ready");
    } else {
      set(type::kWorkersReady, false, "WorkersNotReady", summary);
    }
  }

  void create_workers(std::int32_t count, const std::string& uri) {
    for (int index = 0; count > 0; ++index) {
      if (taken_names_.contains(worker_pod_name(job_.name, index))) continue;
      plan_.creations.push_back(build_worker_pod(job_, index, uri));
      --count;
    }
  }

  // Deletes `excess` live workers: those named in workersToDelete, then those not running and
  // ready, highest index first. A running, ready worker that is not named is in use: it stays.
  // Returns a note for the WorkersReady condition when some excess could not be deleted.
  std::string scale_down(const std::vector<const PodView*>& live, std::size_t excess) {
    std::vector<const PodView*> highest_first(live.rbegin(), live.rend());
    for (const PodView* pod : highest_first) {
      if (excess == 0) break;
      if (to_delete_.contains(pod->name)) {
        delete_pod(*pod, job_.workers_to_delete.contains(pod->name)
                             ? "scale down: named in spec.workers.workersToDelete"
                             : "scale down: released by the program (ConfigMap " +
                                   release_config_map_name(job_.name) + ")");
        --excess;
      }
    }
    for (const PodView* pod : highest_first) {
      if (excess == 0) break;
      if (!pod->ready && !deleting(*pod)) {
        delete_pod(*pod, "scale down: not running and ready yet");
        --excess;
      }
    }
    if (excess == 0) return {};
    return plural_pods(excess) +
           " above the desired count are in use; name released ones in "
           "spec.workers.workersToDelete";
  }

  WorkerCounts write_worker_counts() {
    WorkerCounts counts;
    std::int64_t active = 0;
    std::int64_t failed = 0;
    for (const PodView& pod : workers_) {
      if (pod.phase == "Failed") ++failed;
      if (!pod.live() || deleting(pod)) continue;
      ++active;
      if (pod.ready) ++counts.ready;
    }
    json released = json::array();
    for (const std::string& name : to_delete_) {
      if (!is_worker_name(name)) continue;
      const bool counted = std::any_of(workers_.begin(), workers_.end(), [&](const PodView& pod) {
        return pod.name == name && pod.live() && !deleting(pod);
      });
      if (!counted) released.push_back(name);
    }
    status()["workers"] = {{"desired", job_.desired_workers(requested_by_program_)},
                           {"requested", requested_by_program_},
                           {"ready", counts.ready},
                           {"active", active},
                           {"failed", failed},
                           {"selector", worker_selector(job_.name)}};
    if (!released.empty()) status()["workers"]["released"] = std::move(released);
    return counts;
  }

  // Pending until the name service, the launcher and every desired worker first run together;
  // Running from then on while the launcher runs (a lost worker shows as Degraded instead).
  void write_phase() {
    const bool launcher_running = launcher_ && launcher_->phase == "Running";
    const bool all_running = launcher_running &&
                             condition_is_true(conditions(), type::kNameServiceReady) &&
                             condition_is_true(conditions(), type::kWorkersReady);
    const bool was_running = status().value("phase", "") == "Running";
    status()["phase"] = (all_running || (was_running && launcher_running)) ? "Running" : "Pending";
  }

  // The job ended, now (`outcome`) or before. The pass that finds the end only records it: were
  // pods deleted first and the status write then refused (409), the next pass would see the
  // launcher gone and record LauncherDeleted instead of the real reason. Once the status says the
  // job ended, its pods go by cleanPodPolicy, then the job itself after ttlSecondsAfterFinished.
  void finish(const std::optional<Outcome>& outcome) {
    plan_.creations.clear();
    plan_.deletions.clear();
    plan_.updates.clear();
    if (outcome) {
      set(outcome->succeeded ? type::kSucceeded : type::kFailed, true, outcome->reason,
          outcome->message);
      set(type::kLauncherRunning, false, "JobFinished",
          "the job " + std::string(outcome->succeeded ? "succeeded" : "failed"));
      status()["phase"] = outcome->succeeded ? "Succeeded" : "Failed";
      status()["completionTime"] = now_;
      write_worker_counts();
      return;
    }
    if (!status().contains("completionTime") || !status()["completionTime"].is_string()) {
      status()["completionTime"] = now_;
    }
    for_each_pod([&](const PodView& pod) {
      if (pod.being_deleted) return;
      if (job_.clean_pod_policy == CleanPodPolicy::kAll ||
          (job_.clean_pod_policy == CleanPodPolicy::kRunning && !pod.finished())) {
        delete_pod(pod, "the job finished (cleanPodPolicy)");
      }
    });
    write_worker_counts();
    if (!job_.ttl_seconds_after_finished) return;
    const auto completed = parse_time(status()["completionTime"].get<std::string>());
    const auto expiry =
        completed.value_or(observed_.now) + std::chrono::seconds(*job_.ttl_seconds_after_finished);
    if (observed_.now >= expiry) {
      plan_.delete_job = true;
    } else {
      requeue_after(std::chrono::ceil<std::chrono::seconds>(expiry - observed_.now));
    }
  }

  // Events for the conditions that changed in this pass (WorkerLost is recorded where found).
  void record_transition_events(const json& before) {
    auto became = [&](std::string_view condition_type, bool value) {
      const json* now = find_condition(conditions(), condition_type);
      if (now == nullptr || now->value("status", "") != (value ? "True" : "False")) return false;
      const json* was = find_condition(before, condition_type);
      return was == nullptr ? value : was->value("status", "") != now->value("status", "");
    };
    auto record = [&](std::string_view condition_type, bool warning) {
      const json* condition = find_condition(conditions(), condition_type);
      plan_.events.push_back(
          JobEvent{warning, condition->value("reason", ""), condition->value("message", "")});
    };
    if (became(type::kNameServiceReady, true)) record(type::kNameServiceReady, false);
    if (became(type::kSuspended, true)) record(type::kSuspended, false);
    if (became(type::kSuspended, false)) record(type::kSuspended, false);
    if (became(type::kSucceeded, true)) record(type::kSucceeded, false);
    if (became(type::kFailed, true)) record(type::kFailed, true);
    if (became(type::kNameConflict, true)) record(type::kNameConflict, true);
  }

  const JobSpec& job_;
  const ObservedState& observed_;
  const ReconcileSettings& settings_;
  const std::string now_;
  ReconcilePlan plan_;
  // Worker pods released: spec.workers.workersToDelete and the release ConfigMap's list.
  std::set<std::string> to_delete_;
  std::vector<std::string> refused_release_lines_;
  // The worker pods the program asks for (its ConfigMap's workersRequested).
  std::int32_t requested_by_program_ = 0;
  std::optional<PodView> name_service_;
  std::optional<PodView> launcher_;
  std::vector<PodView> workers_;
  std::vector<PodView> others_;
  std::vector<ForeignObject> foreign_;
  // Names of every observed pod, ours or not: a new worker takes an index whose name is free.
  std::set<std::string> taken_names_;
};

}  // namespace

std::string describe_controller(const json& object) {
  const json::json_pointer pointer("/metadata/ownerReferences");
  if (object.contains(pointer) && object.at(pointer).is_array()) {
    for (const json& reference : object.at(pointer)) {
      if (reference.is_object() && reference.value("controller", false)) {
        return "controlled by " + reference.value("kind", std::string("?")) + " " +
               reference.value("name", std::string("?"));
      }
    }
  }
  return "no controller";
}

ReconcilePlan reconcile(const JobSpec& job, const ObservedState& observed,
                        const ReconcileSettings& settings) {
  return Pass(job, observed, settings).run();
}

}  // namespace fiber::k8s::controller
