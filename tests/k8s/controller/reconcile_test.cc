#include "k8s/controller/reconcile.h"

#include "k8s/controller/release_list.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "k8s/controller/conditions.h"
#include "k8s/controller/launcher_access.h"
#include "k8s/controller/release_list.h"

namespace fiber::k8s::controller {
namespace {

using nlohmann::json;

constexpr const char* kUri = "123456.0;tcp://10.244.1.5:40123";
const SystemTime kNow = parse_time_or_throw("2026-01-01T12:00:00Z");
const std::string kNowText = "2026-01-01T12:00:00Z";

json job_json(json workers = json::object(), json run_policy = json::object()) {
  json spec_workers = {
      {"template", {{"spec", {{"containers", {{{"name", "w"}, {"image", "img"}}}}}}}},
      {"minReplicas", 1},
      {"maxReplicas", 4}};
  if (workers.is_object()) spec_workers.merge_patch(workers);
  if (!run_policy.is_object()) run_policy = json::object();
  return {
      {"apiVersion", "fibermpi.io/v1alpha1"},
      {"kind", "FiberJob"},
      {"metadata", {{"name", "pi"}, {"namespace", "ns"}, {"uid", "job-uid"}, {"generation", 3}}},
      {"spec",
       {{"launcher", {{"template", {{"spec", {{"containers", {{{"name", "l"}}}}}}}}}},
        {"workers", spec_workers},
        {"runPolicy", run_policy}}}};
}

JobSpec job(json workers = json::object(), json run_policy = json::object()) {
  return parse_job_spec(job_json(std::move(workers), std::move(run_policy)));
}

json pod(const std::string& name, const std::string& role, const std::string& phase,
         std::optional<int> index = std::nullopt, bool ready = true) {
  json labels = {{"fibermpi.io/job-name", "pi"}, {"fibermpi.io/role", role}};
  if (index) labels["fibermpi.io/worker-index"] = std::to_string(*index);
  json result = {{"metadata",
                  {{"name", name},
                   {"namespace", "ns"},
                   {"uid", name + "-uid"},
                   {"labels", labels},
                   {"ownerReferences", {{{"uid", "job-uid"}, {"controller", true}}}}}},
                 {"status", {{"phase", phase}}}};
  if (phase == "Running") {
    result["status"]["conditions"] = {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}};
  }
  return result;
}

json worker(int index, const std::string& phase = "Running", bool ready = true) {
  return pod("pi-worker-" + std::to_string(index), "worker", phase, index, ready);
}

json exited(json pod, int code) {
  pod["status"]["containerStatuses"] = {
      {{"name", "c"}, {"state", {{"terminated", {{"exitCode", code}}}}}}};
  return pod;
}

json being_deleted(json pod) {
  pod["metadata"]["deletionTimestamp"] = "2026-01-01T11:59:00Z";
  return pod;
}

// The status of a job whose name service is ready and that saw `active` live workers.
json ready_status(int active, int replacements = 0) {
  return {{"startTime", "2026-01-01T11:00:00Z"},
          {"nameService", {{"podName", "pi-nameservice"}, {"uri", kUri}}},
          {"launcher", {{"podName", "pi-launcher"}, {"phase", "Running"}}},
          {"workers", {{"active", active}}},
          {"workerReplacements", replacements},
          {"conditions",
           {{{"type", "NameServiceReady"},
             {"status", "True"},
             {"reason", "NameServiceRunning"},
             {"message", std::string("the name service listens at ") + kUri},
             {"observedGeneration", 3},
             {"lastTransitionTime", "2026-01-01T11:00:01Z"}}}}};
}

std::vector<json> running_job_pods(int workers) {
  std::vector<json> pods = {pod("pi-nameservice", "name-service", "Running"),
                            pod("pi-launcher", "launcher", "Running")};
  for (int i = 0; i < workers; ++i) pods.push_back(worker(i));
  return pods;
}

constexpr LauncherAccess kAllAccess = {.service_account = true, .role = true, .role_binding = true};
constexpr JobIsolation kIsolated = {.join_token_secret = true, .network_policy = true};

// The tests' settings: a fixed token, so that plans compare equal.
ReconcileSettings test_settings() {
  return ReconcileSettings{"runtime:test",
                           [] { return std::string("0123456789abcdef"); },
                           {EgressPeer{"10.0.0.1/32", 6443}}};
}

// The job's release ConfigMap listing `names` (the launcher's writes).
json release_list(const JobSpec& spec, const std::string& names = "") {
  json config_map = build_release_config_map(spec);
  config_map["data"][kReleaseListKey] = names;
  return config_map;
}

// What a pass sees of a job whose Service, empty release list, launcher access and isolation
// exist (created by an earlier pass).
ObservedState observed_job(const JobSpec& spec, json status, std::vector<json> pods) {
  ObservedState observed;
  observed.status = std::move(status);
  observed.pods = std::move(pods);
  observed.service_exists = true;
  observed.launcher_access = kAllAccess;
  observed.isolation = kIsolated;
  observed.release_config_map = release_list(spec);
  observed.now = kNow;
  return observed;
}

// A pass over such a job; `release` replaces its empty release list.
ReconcilePlan run(const JobSpec& spec, json status, std::vector<json> pods,
                  std::optional<std::string> uri_from_log = std::nullopt,
                  LauncherAccess access = kAllAccess, std::optional<json> release = std::nullopt) {
  ObservedState observed = observed_job(spec, std::move(status), std::move(pods));
  observed.launcher_access = access;
  if (release) observed.release_config_map = *release;
  observed.name_service_uri_from_log = std::move(uri_from_log);
  // A shortfall these passes find has lasted long enough to count (the tests of the wait set
  // their own time).
  observed.unexplained_shortfall_since = kNow - kLossConfirmation;
  return reconcile(spec, observed, test_settings());
}

// The pass after `plan`'s status was written (the cache now shows it), over the same pods.
ReconcilePlan next_pass(const JobSpec& spec, const ReconcilePlan& plan, std::vector<json> pods) {
  return run(spec, plan.status, std::move(pods));
}

// Names of the objects created: pods and the Service by name, others as KIND/NAME.
std::vector<std::string> created_names(const ReconcilePlan& plan) {
  std::vector<std::string> names;
  for (const json& object : plan.creations) {
    const std::string kind = object["kind"];
    const std::string name = object["metadata"]["name"];
    names.push_back(kind == "Pod" || kind == "Service" ? name : kind + "/" + name);
  }
  return names;
}

const std::vector<std::string> kLauncherAccess = {"ServiceAccount/pi-launcher", "Role/pi-launcher",
                                                  "RoleBinding/pi-launcher"};

std::vector<std::string> deleted_names(const ReconcilePlan& plan) {
  std::vector<std::string> names;
  for (const PodDeletion& deletion : plan.deletions) names.push_back(deletion.name);
  return names;
}

const json& condition(const ReconcilePlan& plan, std::string_view type) {
  const json* found = find_condition(plan.status["conditions"], type);
  if (found == nullptr) throw std::runtime_error("no condition " + std::string(type));
  return *found;
}

bool has_event(const ReconcilePlan& plan, const std::string& reason, bool warning) {
  return std::any_of(plan.events.begin(), plan.events.end(), [&](const JobEvent& event) {
    return event.reason == reason && event.warning == warning;
  });
}

using Names = std::vector<std::string>;

TEST(Reconcile, NewJobGetsServiceAndNameServiceOnly) {
  ObservedState observed;
  observed.now = kNow;
  const ReconcilePlan plan = reconcile(job(), observed, test_settings());
  // The launcher's account and Role come first, long before its pod: a create that fails is made
  // again by the passes that wait for the name service.
  EXPECT_EQ(created_names(plan),
            (Names{"pi", "ConfigMap/pi-release", "ServiceAccount/pi-launcher", "Role/pi-launcher",
                   "RoleBinding/pi-launcher", "Secret/pi-join-token", "NetworkPolicy/pi",
                   "pi-nameservice"}));
  EXPECT_EQ(plan.creations[0]["kind"], "Service");
  EXPECT_TRUE(plan.deletions.empty());
  EXPECT_EQ(plan.status["phase"], "Pending");
  EXPECT_EQ(plan.status["startTime"], kNowText);
  EXPECT_EQ(plan.status["observedGeneration"], 3);
  EXPECT_EQ(plan.status["workers"],
            (json{{"desired", 1},
                  {"requested", 0},
                  {"ready", 0},
                  {"active", 0},
                  {"failed", 0},
                  {"selector", "fibermpi.io/job-name=pi,fibermpi.io/role=worker"}}));
  EXPECT_EQ(condition(plan, "Created")["status"], "True");
  EXPECT_EQ(condition(plan, "Created")["lastTransitionTime"], kNowText);
  EXPECT_EQ(condition(plan, "Created")["observedGeneration"], 3);
  EXPECT_EQ(condition(plan, "NameServiceReady")["status"], "False");
  EXPECT_EQ(condition(plan, "LauncherRunning")["reason"], "WaitingForNameService");
  EXPECT_EQ(condition(plan, "WorkersReady")["reason"], "WaitingForNameService");
  EXPECT_FALSE(plan.read_name_service_log);
}

TEST(Reconcile, ExistingServiceIsNotCreatedAgain) {
  const ReconcilePlan plan = run(job(), json::object(), {});
  EXPECT_EQ(created_names(plan), (Names{"pi-nameservice"}));
}

TEST(Reconcile, RunningNameServiceWithoutUriAsksForItsLog) {
  const ReconcilePlan plan =
      run(job(), json::object(), {pod("pi-nameservice", "name-service", "Running")});
  EXPECT_TRUE(plan.read_name_service_log);
  EXPECT_EQ(plan.requeue_after, std::chrono::seconds(1));
  EXPECT_TRUE(plan.creations.empty());
  EXPECT_EQ(condition(plan, "NameServiceReady")["reason"], "WaitingForURI");
}

TEST(Reconcile, PendingNameServiceWaits) {
  const ReconcilePlan plan =
      run(job(), json::object(), {pod("pi-nameservice", "name-service", "Pending")});
  EXPECT_FALSE(plan.read_name_service_log);
  EXPECT_TRUE(plan.creations.empty());
  EXPECT_EQ(condition(plan, "NameServiceReady")["reason"], "NameServicePending");
}

TEST(Reconcile, UriFromLogMakesNameServiceReadyAndCreatesLauncherAndWorkers) {
  const ReconcilePlan plan = run(job({{"replicas", 2}}), json::object(),
                                 {pod("pi-nameservice", "name-service", "Running")}, kUri);
  EXPECT_EQ(created_names(plan), (Names{"pi-worker-0", "pi-worker-1", "pi-launcher"}));
  EXPECT_EQ(plan.status["nameService"], (json{{"podName", "pi-nameservice"}, {"uri", kUri}}));
  EXPECT_EQ(condition(plan, "NameServiceReady")["status"], "True");
  EXPECT_TRUE(has_event(plan, "NameServiceRunning", false));
  for (const json& created : plan.creations) {
    if (created["kind"] != "Pod") continue;
    bool found = false;
    for (const json& variable : created["spec"]["containers"][0]["env"]) {
      if (variable["name"] == "FIBER_NAME_SERVICE_URI") found = variable["value"] == kUri;
    }
    EXPECT_TRUE(found) << created["metadata"]["name"];
  }
}

TEST(Reconcile, DesiredIsReplicasClampedToMinAndMax) {
  EXPECT_EQ(job({{"replicas", 9}}).desired_workers(), 4);
  EXPECT_EQ(job({{"replicas", 0}}).desired_workers(), 1);
  EXPECT_EQ(job().desired_workers(), 1);  // unset: minReplicas
  EXPECT_EQ(job({{"replicas", 3}}).desired_workers(), 3);
  EXPECT_EQ(job({{"replicas", 2}, {"minReplicas", 0}, {"maxReplicas", 0}}).desired_workers(), 0);
  // The program's request (workersRequested) and replicas (people, an HPA): the larger counts.
  EXPECT_EQ(job({{"replicas", 1}}).desired_workers(3), 3);
  EXPECT_EQ(job({{"replicas", 3}}).desired_workers(2), 3);
  EXPECT_EQ(job({{"replicas", 1}}).desired_workers(9), 4);
  EXPECT_EQ(job({{"replicas", 0}, {"minReplicas", 0}}).desired_workers(0), 0);
}

// The release ConfigMap as the launcher writes it when it asks for `requested` pods.
json release_list_requesting(const JobSpec& spec, const std::string& requested,
                             const std::string& names = "") {
  json config_map = release_list(spec, names);
  config_map["data"][kRequestedWorkersKey] = requested;
  return config_map;
}

TEST(Reconcile, TheProgramsRequestAndAnAutoscalersReplicasCombineIntoTheLarger) {
  // An HPA keeps replicas at 1 while the program asks for 3: three workers, and the HPA's value
  // is neither written over nor needed higher.
  const JobSpec spec = job({{"replicas", 1}, {"minReplicas", 0}});
  ReconcilePlan plan = run(spec, ready_status(1), running_job_pods(1), std::nullopt, kAllAccess,
                           release_list_requesting(spec, "3"));
  EXPECT_EQ(created_names(plan), (Names{"pi-worker-1", "pi-worker-2"}));
  EXPECT_EQ(plan.status["workers"]["desired"], 3);
  EXPECT_EQ(plan.status["workers"]["requested"], 3);
  EXPECT_TRUE(plan.events.empty());
  // The HPA scales to 4 while the program still asks for 3: four.
  const JobSpec scaled = job({{"replicas", 4}, {"minReplicas", 0}});
  plan = run(scaled, ready_status(3), running_job_pods(3), std::nullopt, kAllAccess,
             release_list_requesting(scaled, "3"));
  EXPECT_EQ(created_names(plan), (Names{"pi-worker-3"}));
  EXPECT_EQ(plan.status["workers"]["desired"], 4);
  // The HPA scales down to 1 while the program asks for 3 and lists none: no pod is deleted.
  plan = run(spec, ready_status(3), running_job_pods(3), std::nullopt, kAllAccess,
             release_list_requesting(spec, " 3\n"));
  EXPECT_TRUE(plan.deletions.empty());
  EXPECT_EQ(plan.status["workers"]["desired"], 3);
}

TEST(Reconcile, TheEgressPolicyExistsExactlyWhileTheNamespaceIsolatesEgress) {
  const JobSpec spec = job();
  ObservedState observed = observed_job(spec, ready_status(1), running_job_pods(1));
  // No policy isolates egress: none is made.
  ReconcilePlan plan = reconcile(spec, observed, test_settings());
  EXPECT_TRUE(plan.creations.empty());
  // A default deny: the job's egress policy is made, with the API server's endpoints.
  const std::vector<std::string> all = {"launcher", "name-service", "worker"};
  observed.egress_isolated_roles = all;
  plan = reconcile(spec, observed, test_settings());
  const json wanted = build_egress_network_policy(spec, all, {EgressPeer{"10.0.0.1/32", 6443}});
  ASSERT_EQ(plan.creations.size(), 1u);
  EXPECT_EQ(plan.creations[0], wanted);
  EXPECT_TRUE(plan.events.empty());
  // Made already: nothing to do; another version's rules are replaced at the version read.
  json found = wanted;
  found["metadata"]["uid"] = "egress-uid";
  found["metadata"]["resourceVersion"] = "7";
  observed.egress_policy = found;
  EXPECT_TRUE(reconcile(spec, observed, test_settings()).updates.empty());
  observed.egress_policy["spec"]["egress"].erase(2);
  observed.egress_policy.erase("kind");  // as a list's items come
  plan = reconcile(spec, observed, test_settings());
  ASSERT_EQ(plan.updates.size(), 1u);
  EXPECT_EQ(plan.updates[0]["spec"], wanted["spec"]);
  EXPECT_EQ(plan.updates[0]["kind"], "NetworkPolicy");
  EXPECT_EQ(plan.updates[0]["metadata"]["resourceVersion"], "7");
  // A deny of the workers' egress alone: the policy is narrowed to them (selecting the launcher
  // too would isolate it).
  observed.egress_policy = found;
  observed.egress_isolated_roles = {"worker"};
  plan = reconcile(spec, observed, test_settings());
  ASSERT_EQ(plan.updates.size(), 1u);
  EXPECT_EQ(
      plan.updates[0]["spec"],
      build_egress_network_policy(spec, {"worker"}, {EgressPeer{"10.0.0.1/32", 6443}})["spec"]);
  // The deny is gone: the job's policy goes too (alone, it would isolate the pods itself).
  observed.egress_isolated_roles.clear();
  plan = reconcile(spec, observed, test_settings());
  ASSERT_EQ(plan.object_deletions.size(), 1u);
  EXPECT_EQ(plan.object_deletions[0],
            (ObjectDeletion{"NetworkPolicy", "pi.egress", "egress-uid",
                            "no other NetworkPolicy isolates the egress of the job's pods"}));
  // Without the API server's endpoints: made all the same, and a warning says what to do.
  observed.egress_isolated_roles = all;
  observed.egress_policy = json();
  ReconcileSettings unknown = test_settings();
  unknown.api_server_egress.clear();
  plan = reconcile(spec, observed, unknown);
  ASSERT_EQ(plan.creations.size(), 1u);
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].reason, "NoApiServerEgress");
  EXPECT_NE(plan.events[0].message.find("--api-server-egress"), std::string::npos);
}

TEST(Reconcile, ARequestThatIsNoCountIsReportedAndCountsAsNone) {
  const JobSpec spec = job({{"replicas", 1}, {"minReplicas", 0}});
  for (const std::string bad : {"three", "-1", "100001", "1e3", "99999999999999999999"}) {
    const ReconcilePlan plan = run(spec, ready_status(1), running_job_pods(1), std::nullopt,
                                   kAllAccess, release_list_requesting(spec, bad));
    EXPECT_TRUE(plan.creations.empty()) << bad;
    EXPECT_EQ(plan.status["workers"]["requested"], 0) << bad;
    ASSERT_EQ(plan.events.size(), 1u) << bad;
    EXPECT_EQ(plan.events[0].reason, "InvalidReleaseList");
    EXPECT_NE(plan.events[0].message.find("workersRequested '" + bad.substr(0, 80) +
                                          "' is not a count of worker pods (0 to 100000)"),
              std::string::npos)
        << plan.events[0].message;
  }
}

TEST(Reconcile, GrowingUsesTheLowestFreeIndexes) {
  std::vector<json> pods = running_job_pods(0);
  pods.push_back(worker(1));
  pods.push_back(worker(3));
  const ReconcilePlan plan = run(job({{"replicas", 4}}), ready_status(2), pods);
  EXPECT_EQ(created_names(plan), (Names{"pi-worker-0", "pi-worker-2"}));
  EXPECT_EQ(plan.creations[0]["metadata"]["labels"]["fibermpi.io/worker-index"], "0");
  EXPECT_TRUE(plan.deletions.empty());
  EXPECT_EQ(plan.status["workers"]["desired"], 4);
  EXPECT_EQ(plan.status["workers"]["ready"], 2);
  EXPECT_EQ(condition(plan, "WorkersReady")["status"], "False");
  EXPECT_EQ(condition(plan, "WorkersReady")["message"], "2 of 4 worker pods ready");
}

TEST(Reconcile, AllRunningMakesTheJobRunning) {
  const ReconcilePlan plan = run(job({{"replicas", 2}}), ready_status(2), running_job_pods(2));
  EXPECT_TRUE(plan.creations.empty());
  EXPECT_TRUE(plan.deletions.empty());
  EXPECT_EQ(plan.status["phase"], "Running");
  EXPECT_EQ(condition(plan, "WorkersReady")["status"], "True");
  EXPECT_EQ(condition(plan, "LauncherRunning")["status"], "True");
  EXPECT_EQ(plan.status["launcher"], (json{{"podName", "pi-launcher"}, {"phase", "Running"}}));
  // The NameServiceReady condition did not change: its transition time is kept, and no event.
  EXPECT_EQ(condition(plan, "NameServiceReady")["lastTransitionTime"], "2026-01-01T11:00:01Z");
  EXPECT_TRUE(plan.events.empty());
}

TEST(Reconcile, ALauncherAccessObjectGoneFromARunningJobIsCreatedAgain) {
  // A failed create, or one deleted by hand: without it the program gets 403 from the API.
  const JobSpec spec = job({{"replicas", 2}});
  const ReconcilePlan no_role = run(spec, ready_status(2), running_job_pods(2), std::nullopt,
                                    {.service_account = true, .role = false, .role_binding = true});
  EXPECT_EQ(created_names(no_role), (Names{"Role/pi-launcher"}));
  EXPECT_EQ(no_role.status["phase"], "Running");
  const ReconcilePlan none =
      run(spec, ready_status(2), running_job_pods(2), std::nullopt, LauncherAccess{});
  EXPECT_EQ(created_names(none), kLauncherAccess);
  // The Role's rules are the launcher's, on its job alone.
  const json& role = none.creations[1];
  EXPECT_EQ(role["rules"][0]["resourceNames"], json::array({"pi"}));
}

TEST(Reconcile, AJoinTokenOrNetworkPolicyGoneFromARunningJobIsCreatedAgain) {
  const JobSpec spec = job({{"replicas", 2}});
  ObservedState observed;
  observed.status = ready_status(2);
  observed.pods = running_job_pods(2);
  observed.service_exists = true;
  observed.launcher_access = kAllAccess;
  observed.release_config_map = release_list(spec);
  observed.now = kNow;
  const ReconcilePlan plan = reconcile(spec, observed, test_settings());
  EXPECT_EQ(created_names(plan), (Names{"Secret/pi-join-token", "NetworkPolicy/pi"}));
  EXPECT_EQ(plan.creations[0]["stringData"]["token"], "0123456789abcdef");
  EXPECT_EQ(plan.status["phase"], "Running");
  observed.isolation = {.join_token_secret = true, .network_policy = false};
  EXPECT_EQ(created_names(reconcile(spec, observed, test_settings())), (Names{"NetworkPolicy/pi"}));
}

TEST(Reconcile, ASuspendedOrFinishedJobDoesNotCreateLauncherAccess) {
  const ReconcilePlan suspended = run(job({}, {{"suspend", true}}), ready_status(1),
                                      running_job_pods(1), std::nullopt, LauncherAccess{});
  EXPECT_TRUE(suspended.creations.empty());
  json status = ready_status(0);
  status["phase"] = "Succeeded";
  status["completionTime"] = "2026-01-01T11:59:30Z";
  set_condition(status["conditions"], Condition{"Succeeded", true, "LauncherSucceeded", "x"}, 3,
                "2026-01-01T11:59:30Z");
  EXPECT_TRUE(run(job(), status, {}, std::nullopt, LauncherAccess{}).creations.empty());
}

TEST(Reconcile, SecondPassOverItsOwnStatusChangesNothing) {
  const ReconcilePlan first = run(job({{"replicas", 2}}), ready_status(2), running_job_pods(2));
  const ReconcilePlan second = run(job({{"replicas", 2}}), first.status, running_job_pods(2));
  EXPECT_EQ(second.status, first.status);
  EXPECT_TRUE(second.events.empty());
}

TEST(Reconcile, UnreadyWorkerKeepsPhasePendingAtStart) {
  std::vector<json> pods = running_job_pods(1);
  pods.push_back(worker(1, "Running", false));
  const ReconcilePlan plan = run(job({{"replicas", 2}}), ready_status(2), pods);
  EXPECT_EQ(plan.status["phase"], "Pending");
  EXPECT_EQ(plan.status["workers"]["ready"], 1);
  EXPECT_EQ(plan.status["workers"]["active"], 2);
}

TEST(Reconcile, VanishedWorkerIsReplacedAndCounted) {
  json status = ready_status(3);
  status["phase"] = "Running";
  std::vector<json> pods = running_job_pods(0);
  pods.push_back(worker(0));
  pods.push_back(worker(2));
  // The pass that finds the loss counts it and creates nothing: the count is written first.
  const ReconcilePlan plan = run(job({{"replicas", 3}}), status, pods);
  EXPECT_TRUE(plan.creations.empty());
  EXPECT_EQ(plan.status["workerReplacements"], 1);
  EXPECT_EQ(plan.status["workers"]["active"], 2);
  EXPECT_EQ(condition(plan, "Degraded")["status"], "True");
  EXPECT_EQ(condition(plan, "Degraded")["reason"], "WorkerLost");
  EXPECT_TRUE(has_event(plan, "WorkerLost", true));
  EXPECT_EQ(plan.status["phase"], "Running");  // losing a worker never fails or stalls the job
  EXPECT_FALSE(condition_is_true(plan.status["conditions"], "Failed"));
  // Once that status is written, the next pass replaces the worker without counting it again.
  const ReconcilePlan replaced = next_pass(job({{"replicas", 3}}), plan, pods);
  EXPECT_EQ(created_names(replaced), (Names{"pi-worker-1"}));
  EXPECT_EQ(replaced.status["workerReplacements"], 1);
  EXPECT_TRUE(replaced.events.empty());
}

// A pass over a running job of `replicas` workers, 2 of them live of the 3 the last pass counted,
// whose shortfall the controller first saw at `since` (unset: this pass is the first to see it).
ReconcilePlan shortfall_pass(std::optional<SystemTime> since, std::vector<json> pods,
                             json release = nullptr, int replicas = 3) {
  const JobSpec spec = job({{"replicas", replicas}});
  json status = ready_status(3);
  status["phase"] = "Running";
  ObservedState observed = observed_job(spec, std::move(status), std::move(pods));
  if (!release.is_null()) observed.release_config_map = std::move(release);
  observed.unexplained_shortfall_since = since;
  return reconcile(spec, observed, test_settings());
}

std::vector<json> two_of_three_workers(const std::string& third_phase) {
  std::vector<json> pods = running_job_pods(2);
  pods.push_back(exited(worker(2, third_phase), 0));
  return pods;
}

TEST(Reconcile, AFailedWorkerCountsAsLostAtOnce) {
  // No release ends in failure: no wait for a release list.
  const ReconcilePlan counted = shortfall_pass(std::nullopt, two_of_three_workers("Failed"));
  EXPECT_TRUE(counted.unexplained_shortfall);
  EXPECT_EQ(counted.status["workerReplacements"], 1);
  EXPECT_TRUE(has_event(counted, "WorkerLost", true));
}

TEST(Reconcile, ASucceededWorkerNotListedCountsAsLostOnlyOnceItHasLasted) {
  // It may be a release whose list is on its way. First seen now, then 1 s ago: nothing is
  // counted, replaced or written over, and the job is looked at again when the wait ends.
  for (const auto& [since, wait] :
       std::vector<std::pair<std::optional<SystemTime>, std::chrono::seconds>>{
           {std::nullopt, kLossConfirmation},
           {kNow - std::chrono::seconds(1), std::chrono::seconds(1)}}) {
    const ReconcilePlan waiting = shortfall_pass(since, two_of_three_workers("Succeeded"));
    EXPECT_TRUE(waiting.unexplained_shortfall);
    EXPECT_EQ(waiting.status["workerReplacements"], 0);
    EXPECT_EQ(waiting.status["workers"]["active"], 3);
    EXPECT_TRUE(waiting.creations.empty());
    EXPECT_TRUE(waiting.deletions.empty());
    EXPECT_FALSE(has_event(waiting, "WorkerLost", true));
    ASSERT_TRUE(waiting.requeue_after.has_value());
    EXPECT_EQ(*waiting.requeue_after, wait);
  }
  // Still there kLossConfirmation later: one loss.
  const ReconcilePlan counted =
      shortfall_pass(kNow - kLossConfirmation, two_of_three_workers("Succeeded"));
  EXPECT_TRUE(counted.unexplained_shortfall);
  EXPECT_EQ(counted.status["workerReplacements"], 1);
  EXPECT_EQ(counted.status["workers"]["active"], 2);
  EXPECT_TRUE(has_event(counted, "WorkerLost", true));
}

TEST(Reconcile, APodThatEndsBeforeItsReleaseListArrivesIsNoLoss) {
  // The released pod's end reaches the cache first; the release list and the lowered scale come
  // on their own watch streams a moment later.
  const ReconcilePlan first = shortfall_pass(std::nullopt, two_of_three_workers("Succeeded"));
  EXPECT_TRUE(first.unexplained_shortfall);
  EXPECT_EQ(first.status["workerReplacements"], 0);
  // The release list and the scale have arrived: the shortfall is explained, nothing replaced.
  const JobSpec spec = job({{"replicas", 2}});
  const ReconcilePlan later =
      shortfall_pass(kNow - kLossConfirmation, two_of_three_workers("Succeeded"),
                     release_list(spec, "pi-worker-2\n"), 2);
  EXPECT_FALSE(later.unexplained_shortfall);
  EXPECT_EQ(later.status["workerReplacements"], 0);
  EXPECT_TRUE(later.creations.empty());
  EXPECT_EQ(deleted_names(later), (Names{"pi-worker-2"}));
  EXPECT_FALSE(has_event(later, "WorkerLost", true));
  EXPECT_FALSE(condition_is_true(later.status["conditions"], "Degraded"));
}

TEST(Reconcile, ARefusedCountIsCountedAgainAndNothingIsReplacedMeanwhile) {
  // The status write of the counting pass met a 409: the next pass starts from the old status,
  // counts the same loss again, and still creates nothing before its count is written.
  std::vector<json> pods = running_job_pods(1);
  const ReconcilePlan first =
      run(job({{"replicas", 2}}, {{"maxWorkerReplacements", 0}}), ready_status(2), pods);
  EXPECT_EQ(first.status["phase"], "Failed");
  EXPECT_EQ(condition(first, "Failed")["reason"], "TooManyWorkerReplacements");
  EXPECT_TRUE(first.creations.empty());
  const ReconcilePlan again = run(job({{"replicas", 2}}), ready_status(2), pods);
  EXPECT_TRUE(again.creations.empty());
  EXPECT_EQ(again.status["workerReplacements"], 1);
}

TEST(Reconcile, FailedWorkerIsDeletedAndReplacedAtAFreeIndex) {
  std::vector<json> pods = running_job_pods(1);
  pods.push_back(exited(worker(1, "Failed"), 137));
  const ReconcilePlan plan = run(job({{"replicas", 2}}), ready_status(2), pods);
  EXPECT_TRUE(plan.deletions.empty());
  EXPECT_TRUE(plan.creations.empty());
  EXPECT_EQ(plan.status["workerReplacements"], 1);
  EXPECT_EQ(plan.status["workers"]["failed"], 1);
  EXPECT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].message, "lost 1 worker pod [pi-worker-1 (Failed)]; replacing");
  const ReconcilePlan replaced = next_pass(job({{"replicas", 2}}), plan, pods);
  EXPECT_EQ(deleted_names(replaced), (Names{"pi-worker-1"}));
  EXPECT_EQ(replaced.deletions[0].uid, "pi-worker-1-uid");
  EXPECT_EQ(created_names(replaced), (Names{"pi-worker-2"}));
  EXPECT_EQ(replaced.status["workerReplacements"], 1);
}

TEST(Reconcile, WorkerLostMessageNamesTenPodsAndCountsTheRest) {
  std::vector<json> pods = running_job_pods(0);
  for (int i = 0; i < 25; ++i) pods.push_back(exited(worker(i, "Failed"), 1));
  const ReconcilePlan plan =
      run(job({{"replicas", 25}, {"maxReplicas", 30}}), ready_status(25), pods);
  ASSERT_EQ(plan.events.size(), 1u);
  const std::string& message = plan.events[0].message;
  EXPECT_NE(message.find("pi-worker-9 (Failed) and 15 more]"), std::string::npos) << message;
  EXPECT_EQ(message.find("pi-worker-10 "), std::string::npos) << message;
  EXPECT_EQ(condition(plan, "Degraded")["message"], message);
}

TEST(Reconcile, WorkerDeletedByAUserCountsAsLost) {
  std::vector<json> pods = running_job_pods(1);
  pods.push_back(being_deleted(worker(1)));
  const ReconcilePlan plan = run(job({{"replicas", 2}}), ready_status(2), pods);
  EXPECT_TRUE(plan.deletions.empty());
  EXPECT_TRUE(plan.creations.empty());
  EXPECT_EQ(plan.status["workerReplacements"], 1);
  EXPECT_EQ(created_names(next_pass(job({{"replicas", 2}}), plan, pods)), (Names{"pi-worker-2"}));
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].message, "lost 1 worker pod [pi-worker-1 (deleted)]; replacing");
}

TEST(Reconcile, WorkerLostMessageSaysWhenItsNamesIncludeEarlierLosses) {
  // pi-worker-1 was lost at an earlier pass and is still listed (its node is gone, so nobody ends
  // it); pi-worker-2 is this pass's loss.
  std::vector<json> pods = running_job_pods(1);
  pods.push_back(being_deleted(worker(1)));
  pods.push_back(being_deleted(worker(2)));
  const ReconcilePlan plan = run(job({{"replicas", 3}}), ready_status(2), pods);
  EXPECT_EQ(plan.status["workerReplacements"], 1);
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].message,
            "lost 1 worker pod among [pi-worker-1 (deleted), pi-worker-2 (deleted)]; replacing");
}

TEST(Reconcile, DegradedClearsOnceReplacementsAreReady) {
  json status = ready_status(2, 1);
  set_condition(status["conditions"], Condition{"Degraded", true, "WorkerLost", "lost"}, 3,
                "2026-01-01T11:30:00Z");
  const ReconcilePlan still = run(job({{"replicas", 2}}), status, [] {
    std::vector<json> pods = running_job_pods(1);
    pods.push_back(worker(2, "Pending"));
    return pods;
  }());
  EXPECT_EQ(condition(still, "Degraded")["status"], "True");
  const ReconcilePlan healed = run(job({{"replicas", 2}}), status, running_job_pods(2));
  EXPECT_EQ(condition(healed, "Degraded")["status"], "False");
  EXPECT_EQ(condition(healed, "Degraded")["reason"], "WorkersReplaced");
  EXPECT_EQ(healed.status["workerReplacements"], 1);
}

TEST(Reconcile, ReplacementsBeyondTheLimitFailTheJob) {
  std::vector<json> pods = running_job_pods(1);
  const ReconcilePlan within =
      run(job({{"replicas", 2}}, {{"maxWorkerReplacements", 2}}), ready_status(2, 1), pods);
  EXPECT_FALSE(condition_is_true(within.status["conditions"], "Failed"));
  EXPECT_EQ(within.status["workerReplacements"], 2);
  const ReconcilePlan beyond =
      run(job({{"replicas", 2}}, {{"maxWorkerReplacements", 2}}), ready_status(2, 2), pods);
  EXPECT_EQ(beyond.status["phase"], "Failed");
  EXPECT_EQ(condition(beyond, "Failed")["reason"], "TooManyWorkerReplacements");
  EXPECT_EQ(condition(beyond, "Failed")["message"],
            "3 worker pods were lost, more than maxWorkerReplacements (2)");
  EXPECT_TRUE(beyond.creations.empty());
  EXPECT_TRUE(has_event(beyond, "TooManyWorkerReplacements", true));
}

TEST(Reconcile, ShrinkingDeletesNamedPodsFirstThenUnreadyHighestIndexFirst) {
  std::vector<json> pods = running_job_pods(2);
  pods.push_back(worker(2, "Pending"));
  pods.push_back(worker(3, "Running", false));
  pods.push_back(worker(4, "Pending"));
  // 5 live, 1 desired: worker-0 named, then worker-4, worker-3, worker-2 not ready; worker-1 stays.
  const ReconcilePlan plan =
      run(job({{"replicas", 1}, {"workersToDelete", {"pi-worker-0"}}}), ready_status(5), pods);
  EXPECT_EQ(deleted_names(plan),
            (Names{"pi-worker-0", "pi-worker-4", "pi-worker-3", "pi-worker-2"}));
  EXPECT_TRUE(plan.creations.empty());
  EXPECT_EQ(plan.status["workers"]["active"], 1);
  EXPECT_EQ(plan.status["workerReplacements"], 0);
}

TEST(Reconcile, PodsTheProgramListsInItsReleaseConfigMapAreDeletedFirstOnScaleDown) {
  // The launcher may not write its job's spec: it names the pods it gives back in NAME-release,
  // one a line, and lowers its workersRequested in the same write. A line that is no pod name is
  // reported and left out; the others count.
  const JobSpec spec = job({{"replicas", 1}, {"workersToDelete", {"pi-worker-2"}}});
  const json release =
      release_list_requesting(spec, "1", "pi-worker-0\n  pi-worker-1 \nNot_A_Pod\n\n");
  const ReconcilePlan plan =
      run(spec, ready_status(4), running_job_pods(4), std::nullopt, kAllAccess, release);
  EXPECT_EQ(deleted_names(plan), (Names{"pi-worker-2", "pi-worker-1", "pi-worker-0"}));
  ASSERT_EQ(plan.deletions.size(), 3u);
  EXPECT_EQ(plan.deletions[0].reason, "scale down: named in spec.workers.workersToDelete");
  EXPECT_EQ(plan.deletions[1].reason, "scale down: released by the program (ConfigMap pi-release)");
  EXPECT_TRUE(plan.creations.empty());
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0], (JobEvent{true, "InvalidReleaseList",
                                      "ConfigMap pi-release: 'Not_A_Pod' is not a pod name; the "
                                      "line is ignored"}));
  // Once they are gone, the released ones are no loss.
  const ReconcilePlan after = next_pass(spec, plan, running_job_pods(1));
  EXPECT_EQ(after.status["workerReplacements"], 0);
}

TEST(Reconcile, ALauncherRoleWithOtherRulesIsGivenTheControllersAtItsVersion) {
  const JobSpec spec = job();
  json role = build_launcher_role(spec);
  role["metadata"]["resourceVersion"] = "41";
  ObservedState observed = observed_job(spec, ready_status(1), running_job_pods(1));
  observed.launcher_role = role;
  // The controller's own rules: nothing to do.
  EXPECT_TRUE(reconcile(spec, observed, test_settings()).updates.empty());
  // An older controller's (the launcher could patch its whole job): replaced at version 41.
  observed.launcher_role["rules"] = json::array({{{"apiGroups", {"fibermpi.io"}},
                                                  {"resources", {"fiberjobs"}},
                                                  {"resourceNames", {"pi"}},
                                                  {"verbs", {"get", "patch"}}}});
  const ReconcilePlan plan = reconcile(spec, observed, test_settings());
  ASSERT_EQ(plan.updates.size(), 1u);
  EXPECT_EQ(plan.updates[0]["kind"], "Role");
  EXPECT_EQ(plan.updates[0]["metadata"]["resourceVersion"], "41");
  EXPECT_EQ(plan.updates[0]["rules"], role["rules"]);
  EXPECT_TRUE(plan.creations.empty());
}

TEST(Reconcile, AMissingReleaseConfigMapIsCreatedAgain) {
  ObservedState observed;
  observed.status = ready_status(1);
  observed.pods = running_job_pods(1);
  observed.service_exists = true;
  observed.launcher_access = kAllAccess;
  observed.isolation = kIsolated;
  observed.now = kNow;
  const ReconcilePlan plan = reconcile(job(), observed, test_settings());
  EXPECT_EQ(created_names(plan), (Names{"ConfigMap/pi-release"}));
  EXPECT_EQ(plan.creations[0]["data"], (json{{"workersToDelete", ""}}));
  EXPECT_EQ(plan.creations[0]["metadata"]["labels"]["fibermpi.io/job-name"], "pi");
}

TEST(Reconcile, ShrinkingNeverDeletesAWorkerInUse) {
  const ReconcilePlan plan = run(job({{"replicas", 1}}), ready_status(3), running_job_pods(3));
  EXPECT_TRUE(plan.deletions.empty());
  EXPECT_EQ(condition(plan, "WorkersReady")["reason"], "ScaleDownWaiting");
  EXPECT_EQ(condition(plan, "WorkersReady")["message"],
            "3 of 1 worker pods ready; 2 worker pods above the desired count are in use; name "
            "released ones in spec.workers.workersToDelete");
}

TEST(Reconcile, ShrunkWorkersGoneNextPassAreNotLost) {
  const ReconcilePlan plan = run(job({{"replicas", 1}}), ready_status(3), running_job_pods(1));
  EXPECT_EQ(plan.status["workerReplacements"], 0);
  EXPECT_TRUE(plan.creations.empty());
}

TEST(Reconcile, NamedWorkerIsNotDeletedWhenNotShrinking) {
  const ReconcilePlan plan = run(job({{"replicas", 2}, {"workersToDelete", {"pi-worker-0"}}}),
                                 ready_status(2), running_job_pods(2));
  EXPECT_TRUE(plan.deletions.empty());
}

TEST(Reconcile, LauncherSucceededEndsTheJobAndCleansRunningPods) {
  std::vector<json> pods = running_job_pods(2);
  pods[1] = exited(pod("pi-launcher", "launcher", "Succeeded"), 0);
  pods.push_back(exited(worker(2, "Succeeded"), 0));
  const ReconcilePlan plan = run(job({{"replicas", 3}}), ready_status(3), pods);
  EXPECT_EQ(plan.status["phase"], "Succeeded");
  EXPECT_EQ(condition(plan, "Succeeded")["message"], "launcher exited with code 0");
  EXPECT_EQ(plan.status["completionTime"], kNowText);
  EXPECT_EQ(plan.status["launcher"],
            (json{{"podName", "pi-launcher"}, {"phase", "Succeeded"}, {"exitCode", 0}}));
  // The end is written first; the pods go in the pass that sees it written.
  EXPECT_TRUE(plan.deletions.empty());
  EXPECT_TRUE(plan.creations.empty());
  EXPECT_TRUE(has_event(plan, "LauncherSucceeded", false));
  EXPECT_FALSE(plan.requeue_after);
  const ReconcilePlan cleanup = next_pass(job({{"replicas", 3}}), plan, pods);
  EXPECT_EQ(deleted_names(cleanup), (Names{"pi-nameservice", "pi-worker-0", "pi-worker-1"}));
  EXPECT_TRUE(cleanup.events.empty());
  EXPECT_EQ(cleanup.status["conditions"], plan.status["conditions"]);
}

TEST(Reconcile, ARefusedEndIsRecordedAgainWithItsOwnReason) {
  // The status write of the pass that found the launcher's end met a 409. Nothing was deleted, so
  // the next pass, from the old status, finds the same end, not a deleted launcher.
  std::vector<json> pods = running_job_pods(1);
  pods[1] = exited(pod("pi-launcher", "launcher", "Failed"), 3);
  const ReconcilePlan first = run(job(), ready_status(1), pods);
  EXPECT_TRUE(first.deletions.empty());
  const ReconcilePlan again = run(job(), ready_status(1), pods);
  EXPECT_EQ(condition(again, "Failed")["reason"], "LauncherFailed");
  EXPECT_EQ(again.status, first.status);
}

TEST(Reconcile, LauncherFailureCarriesItsExitCode) {
  std::vector<json> pods = running_job_pods(1);
  pods[1] = exited(pod("pi-launcher", "launcher", "Failed"), 3);
  const ReconcilePlan plan = run(job(), ready_status(1), pods);
  EXPECT_EQ(plan.status["phase"], "Failed");
  EXPECT_EQ(condition(plan, "Failed")["reason"], "LauncherFailed");
  EXPECT_EQ(condition(plan, "Failed")["message"], "launcher exited with code 3");
  EXPECT_EQ(plan.status["launcher"]["exitCode"], 3);
  EXPECT_TRUE(has_event(plan, "LauncherFailed", true));
}

TEST(Reconcile, LauncherDeletedWhileRunningFailsTheJob) {
  std::vector<json> pods = running_job_pods(1);
  pods.erase(pods.begin() + 1);
  const ReconcilePlan gone = run(job(), ready_status(1), pods);
  EXPECT_EQ(condition(gone, "Failed")["reason"], "LauncherDeleted");
  EXPECT_TRUE(gone.creations.empty());

  std::vector<json> terminating = running_job_pods(1);
  terminating[1] = being_deleted(terminating[1]);
  const ReconcilePlan deleting = run(job(), ready_status(1), terminating);
  EXPECT_EQ(condition(deleting, "Failed")["reason"], "LauncherDeleted");
}

TEST(Reconcile, CleanPodPolicyAllAndNone) {
  std::vector<json> pods = running_job_pods(1);
  pods[1] = exited(pod("pi-launcher", "launcher", "Failed"), 1);
  const JobSpec all = job({}, {{"cleanPodPolicy", "All"}});
  EXPECT_EQ(deleted_names(next_pass(all, run(all, ready_status(1), pods), pods)),
            (Names{"pi-nameservice", "pi-launcher", "pi-worker-0"}));
  const JobSpec none = job({}, {{"cleanPodPolicy", "None"}});
  EXPECT_TRUE(next_pass(none, run(none, ready_status(1), pods), pods).deletions.empty());
}

TEST(Reconcile, FinishedJobWaitsForItsTtlThenIsDeleted) {
  json status = ready_status(0);
  status["phase"] = "Succeeded";
  status["completionTime"] = "2026-01-01T11:59:30Z";
  set_condition(status["conditions"], Condition{"Succeeded", true, "LauncherSucceeded", "x"}, 3,
                "2026-01-01T11:59:30Z");
  const ReconcilePlan waiting = run(job({}, {{"ttlSecondsAfterFinished", 60}}), status, {});
  EXPECT_FALSE(waiting.delete_job);
  EXPECT_EQ(waiting.requeue_after, std::chrono::seconds(30));
  EXPECT_TRUE(waiting.events.empty());
  EXPECT_TRUE(waiting.creations.empty());
  const ReconcilePlan expired = run(job({}, {{"ttlSecondsAfterFinished", 30}}), status, {});
  EXPECT_TRUE(expired.delete_job);
  EXPECT_FALSE(run(job(), status, {}).delete_job);  // no TTL: kept
}

TEST(Reconcile, DeadlineExceededFailsTheJob) {
  const ReconcilePlan plan =
      run(job({}, {{"activeDeadlineSeconds", 3600}}), ready_status(1), running_job_pods(1));
  EXPECT_EQ(plan.status["phase"], "Failed");
  EXPECT_EQ(condition(plan, "Failed")["reason"], "DeadlineExceeded");
  EXPECT_TRUE(plan.deletions.empty());
  EXPECT_EQ(deleted_names(
                next_pass(job({}, {{"activeDeadlineSeconds", 3600}}), plan, running_job_pods(1))),
            (Names{"pi-nameservice", "pi-launcher", "pi-worker-0"}));
  const ReconcilePlan before =
      run(job({}, {{"activeDeadlineSeconds", 3700}}), ready_status(1), running_job_pods(1));
  EXPECT_EQ(before.status["phase"], "Running");
  EXPECT_EQ(before.requeue_after, std::chrono::seconds(100));
}

TEST(Reconcile, SuspendDeletesEveryPodAndKeepsTheJob) {
  const ReconcilePlan plan =
      run(job({}, {{"suspend", true}}), ready_status(1), running_job_pods(1));
  EXPECT_EQ(deleted_names(plan), (Names{"pi-nameservice", "pi-launcher", "pi-worker-0"}));
  EXPECT_TRUE(plan.creations.empty());
  EXPECT_FALSE(plan.delete_job);
  EXPECT_EQ(plan.status["phase"], "Suspended");
  EXPECT_EQ(condition(plan, "Suspended")["status"], "True");
  EXPECT_FALSE(plan.status.contains("startTime"));
  EXPECT_EQ(plan.status["nameService"], json::object());
  EXPECT_EQ(plan.status["workers"]["active"], 0);
  EXPECT_TRUE(has_event(plan, "Suspended", false));
}

TEST(Reconcile, ResumeStartsAgainWithAFreshStartTime) {
  const ReconcilePlan suspended =
      run(job({}, {{"suspend", true}}), ready_status(1), running_job_pods(1));
  const ReconcilePlan resumed = run(job(), suspended.status, {});
  EXPECT_EQ(created_names(resumed), (Names{"pi-nameservice"}));
  EXPECT_EQ(resumed.status["startTime"], kNowText);
  EXPECT_EQ(condition(resumed, "Suspended")["status"], "False");
  EXPECT_EQ(resumed.status["workerReplacements"], 0);
  EXPECT_FALSE(condition_is_true(resumed.status["conditions"], "Failed"));
  EXPECT_TRUE(has_event(resumed, "Resumed", false));
}

TEST(Reconcile, ResumeWaitsForThePodsOfTheRunBeforeTheSuspensionToGo) {
  const ReconcilePlan suspended =
      run(job({}, {{"suspend", true}}), ready_status(1), running_job_pods(1));
  // Resumed while the old launcher and name service are still in their grace period (one already
  // marked Failed by its node, as a SIGTERMed process is): neither ends the job, nothing is made.
  std::vector<json> terminating = {
      being_deleted(pod("pi-nameservice", "name-service", "Running")),
      being_deleted(exited(pod("pi-launcher", "launcher", "Failed"), 143)),
      being_deleted(worker(0))};
  const ReconcilePlan waiting = run(job(), suspended.status, terminating);
  EXPECT_TRUE(waiting.creations.empty());
  EXPECT_FALSE(condition_is_true(waiting.status["conditions"], "Failed"));
  EXPECT_EQ(waiting.status["phase"], "Pending");
  EXPECT_EQ(condition(waiting, "LauncherRunning")["reason"], "PreviousRunTerminating");
  EXPECT_EQ(waiting.requeue_after, std::chrono::seconds(1));
  EXPECT_FALSE(waiting.delete_job);
  // Once they are gone the job starts again.
  const ReconcilePlan resumed = run(job(), waiting.status, {});
  EXPECT_EQ(created_names(resumed), (Names{"pi-nameservice"}));
  EXPECT_FALSE(condition_is_true(resumed.status["conditions"], "Failed"));
}

TEST(Reconcile, NameServiceLostBeforeTheLauncherIsReplaced) {
  json status = json::object();
  const ReconcilePlan plan =
      run(job(), status, {exited(pod("pi-nameservice", "name-service", "Failed"), 1)});
  EXPECT_EQ(deleted_names(plan), (Names{"pi-nameservice"}));
  EXPECT_EQ(condition(plan, "NameServiceReady")["reason"], "NameServiceLost");
}

TEST(Reconcile, NameServiceLostAfterTheLauncherStartedFailsTheJob) {
  std::vector<json> pods = running_job_pods(1);
  pods.erase(pods.begin());
  const ReconcilePlan plan = run(job(), ready_status(1), pods);
  EXPECT_EQ(condition(plan, "Failed")["reason"], "NameServiceLost");
}

TEST(Reconcile, PodsOfAnotherOwnerAreIgnored) {
  json stranger = worker(0);
  stranger["metadata"]["ownerReferences"][0]["uid"] = "other";
  const ReconcilePlan plan = run(job(), ready_status(0),
                                 {pod("pi-nameservice", "name-service", "Running"),
                                  pod("pi-launcher", "launcher", "Running"), stranger});
  EXPECT_EQ(created_names(plan), (Names{"pi-worker-1"}));
}

TEST(Reconcile, JobBeingDeletedIsLeftToTheGarbageCollector) {
  json document = job_json();
  document["metadata"]["deletionTimestamp"] = kNowText;
  const ReconcilePlan plan = run(parse_job_spec(document), ready_status(1), {});
  EXPECT_TRUE(plan.creations.empty());
  EXPECT_TRUE(plan.deletions.empty());
  EXPECT_EQ(plan.status, ready_status(1));
}

TEST(Reconcile, APodOfSomeoneElseHoldingTheLaunchersNameStopsTheJobWithAReason) {
  std::vector<json> pods = running_job_pods(1);
  pods[1]["metadata"]["ownerReferences"] = {
      {{"kind", "ReplicaSet"}, {"name", "web-1"}, {"uid", "rs-uid"}, {"controller", true}}};
  json status = ready_status(1);
  status.erase("launcher");
  const ReconcilePlan plan = run(job(), status, pods);
  EXPECT_TRUE(plan.creations.empty()) << created_names(plan)[0];
  const json& conflict = condition(plan, "NameConflict");
  EXPECT_EQ(conflict["status"], "True");
  EXPECT_EQ(conflict["reason"], "ObjectNotOwned");
  EXPECT_NE(conflict["message"].get<std::string>().find(
                "Pod pi-launcher (controlled by ReplicaSet web-1)"),
            std::string::npos)
      << conflict["message"];
  EXPECT_TRUE(has_event(plan, "ObjectNotOwned", true));
  // Unchanged, the next pass records no second Event.
  EXPECT_TRUE(next_pass(job(), plan, pods).events.empty());
  // Once the object is gone the job goes on and the condition turns False.
  pods.erase(pods.begin() + 1);
  const ReconcilePlan freed = next_pass(job(), plan, pods);
  EXPECT_EQ(created_names(freed), (Names{"pi-launcher"}));
  EXPECT_EQ(condition(freed, "NameConflict")["status"], "False");
}

TEST(Reconcile, ForeignObjectsTheControllerFoundBlockEveryCreation) {
  ObservedState observed;
  observed.now = kNow;
  observed.foreign_objects = {ForeignObject{"Service", "pi", "no controller"}};
  const ReconcilePlan plan = reconcile(job(), observed, test_settings());
  EXPECT_TRUE(plan.creations.empty());
  EXPECT_EQ(condition(plan, "NameConflict")["message"],
            "the job waits: Service pi (no controller) holds one of its names and is not "
            "controlled by it; delete or rename them");
}

TEST(Reconcile, ConditionMessagesStayUnder32KiB) {
  std::vector<json> pods = {pod("pi-nameservice", "name-service", "Running")};
  const std::string long_uri = "1.0;tcp://" + std::string(40000, 'a');
  json status = {{"nameService", {{"podName", "pi-nameservice"}}}};
  const ReconcilePlan plan = run(job(), status, pods, long_uri);
  const std::string message = condition(plan, "NameServiceReady")["message"];
  EXPECT_LT(message.size(), 32u * 1024);
  EXPECT_TRUE(message.ends_with("...")) << message.substr(message.size() - 10);
}

JobSpec job_with_config(const std::string& config) {
  json object = job_json();
  object["spec"]["config"] = config;
  return parse_job_spec(object);
}

TEST(Reconcile, SpecConfigGetsAConfigMapCreatedFirstAndRewrittenWhenItChanges) {
  ObservedState observed;
  observed.now = kNow;
  const ReconcilePlan plan =
      reconcile(job_with_config("pool_size: 4\n"), observed, test_settings());
  EXPECT_EQ(created_names(plan),
            (Names{"pi", "ConfigMap/pi-config", "ConfigMap/pi-release",
                   "ServiceAccount/pi-launcher", "Role/pi-launcher", "RoleBinding/pi-launcher",
                   "Secret/pi-join-token", "NetworkPolicy/pi", "pi-nameservice"}));
  EXPECT_EQ(plan.creations[1]["data"]["fiber.yaml"], "pool_size: 4\n");

  json config_map = plan.creations[1];
  config_map["metadata"]["resourceVersion"] = "7";
  observed.config_map = config_map;
  observed.service_exists = true;
  observed.launcher_access = kAllAccess;
  observed.isolation = kIsolated;
  observed.release_config_map = release_list(job_with_config("pool_size: 4\n"));
  const ReconcilePlan same =
      reconcile(job_with_config("pool_size: 4\n"), observed, test_settings());
  EXPECT_TRUE(same.updates.empty());
  EXPECT_EQ(created_names(same), (Names{"pi-nameservice"}));

  const ReconcilePlan changed =
      reconcile(job_with_config("pool_size: 8\n"), observed, test_settings());
  ASSERT_EQ(changed.updates.size(), 1u);
  EXPECT_EQ(changed.updates[0]["data"]["fiber.yaml"], "pool_size: 8\n");
  EXPECT_EQ(changed.updates[0]["metadata"]["resourceVersion"], "7");

  // No spec.config: no ConfigMap.
  observed.config_map = nullptr;
  EXPECT_EQ(created_names(reconcile(job(), observed, test_settings())), (Names{"pi-nameservice"}));
}

TEST(Reconcile, LauncherFailureCarriesTheEndOfItsTerminationMessage) {
  std::vector<json> pods = running_job_pods(1);
  pods[1] = exited(pod("pi-launcher", "launcher", "Failed"), 1);
  pods[1]["status"]["containerStatuses"][0]["state"]["terminated"]["message"] =
      "fiber.yaml: unknown key 'pool_sise'\n";
  EXPECT_EQ(condition(run(job(), ready_status(1), pods), "Failed")["message"],
            "launcher exited with code 1: fiber.yaml: unknown key 'pool_sise'");
  pods[1]["status"]["containerStatuses"][0]["state"]["terminated"]["message"] =
      std::string(3000, 'x') + "the end";
  const std::string message = condition(run(job(), ready_status(1), pods), "Failed")["message"];
  EXPECT_TRUE(message.starts_with("launcher exited with code 1: ...xxx")) << message;
  EXPECT_TRUE(message.ends_with("the end"));
  EXPECT_EQ(message.size(), std::string("launcher exited with code 1: ...").size() + 1024);
}

TEST(Reconcile, AReleasedWorkerThatEndsIsNoLossAndIsNotReplacedWhenReplicasWentDown) {
  std::vector<json> pods = running_job_pods(2);
  pods.push_back(exited(worker(2, "Succeeded"), 0));
  const JobSpec shrunk = job({{"replicas", 2}, {"workersToDelete", {"pi-worker-2"}}});
  const ReconcilePlan plan = run(shrunk, ready_status(3), pods);
  EXPECT_EQ(plan.status["workerReplacements"], 0);
  EXPECT_FALSE(has_event(plan, "WorkerLost", true));
  EXPECT_TRUE(plan.creations.empty());
  EXPECT_EQ(deleted_names(plan), (Names{"pi-worker-2"}));  // finished: its name is freed
  EXPECT_EQ(plan.status["workers"]["released"], json::array({"pi-worker-2"}));
}

TEST(Reconcile, AReleasedWorkerThatEndsIsReplacedUncountedWhenReplicasStayed) {
  const JobSpec same = job({{"replicas", 3}, {"workersToDelete", {"pi-worker-2"}}});
  // Succeeded, or already gone.
  std::vector<json> finished = running_job_pods(2);
  finished.push_back(exited(worker(2, "Succeeded"), 0));
  for (const std::vector<json>& pods : {finished, running_job_pods(2)}) {
    const ReconcilePlan plan = run(same, ready_status(3), pods);
    EXPECT_EQ(plan.status["workerReplacements"], 0);
    EXPECT_FALSE(has_event(plan, "WorkerLost", true));
    EXPECT_EQ(plan.creations.size(), 1u);
  }
}

TEST(Reconcile, AReleasedWorkerIsExcusedOnceOnly) {
  // The pod the last pass deleted in a scale-down is listed as released: a real loss in the pass
  // that sees it gone is still counted.
  json status = ready_status(2);
  status["workers"]["released"] = {"pi-worker-2"};
  std::vector<json> pods = running_job_pods(1);
  const ReconcilePlan plan =
      run(job({{"replicas", 2}, {"workersToDelete", {"pi-worker-2"}}}), status, pods);
  EXPECT_EQ(plan.status["workerReplacements"], 1);
  EXPECT_TRUE(has_event(plan, "WorkerLost", true));
}

TEST(Reconcile, AWorkerThatSucceededUnreleasedIsReplacedAsLost) {
  std::vector<json> pods = running_job_pods(1);
  pods.push_back(exited(worker(1, "Succeeded"), 0));
  const ReconcilePlan plan = run(job({{"replicas", 2}}), ready_status(2), pods);
  EXPECT_EQ(plan.status["workerReplacements"], 1);
  EXPECT_EQ(plan.events[0].message, "lost 1 worker pod [pi-worker-1 (Succeeded)]; replacing");
  EXPECT_EQ(created_names(next_pass(job({{"replicas", 2}}), plan, pods)), (Names{"pi-worker-2"}));
}

}  // namespace
}  // namespace fiber::k8s::controller

namespace fiber::k8s::controller {
namespace {

// A pass over a running job whose last pass's pod creates met `refused`.
ReconcilePlan run_refused(const JobSpec& spec, json status, std::vector<json> pods,
                          std::vector<RefusedCreation> refused) {
  ObservedState observed = observed_job(spec, std::move(status), std::move(pods));
  observed.refused_creations = std::move(refused);
  observed.unexplained_shortfall_since = kNow - kLossConfirmation;
  return reconcile(spec, observed, test_settings());
}

TEST(Reconcile, ALauncherTheServerRefusesAsInvalidFailsTheJobWithItsWords) {
  const JobSpec spec = job({{"replicas", 1}});
  json status = ready_status(1);
  status.erase("launcher");  // never created: the server refused it
  std::vector<json> pods = {pod("pi-nameservice", "name-service", "Running"), worker(0)};
  const std::string words =
      "Pod \"pi-launcher\" is invalid: spec.containers[0].image: Required value";
  const ReconcilePlan plan =
      run_refused(spec, status, pods, {{"launcher", "pi-launcher", 422, words}});
  EXPECT_EQ(plan.status["phase"], "Failed");
  EXPECT_EQ(condition(plan, "Failed")["reason"], "LauncherRefused");
  EXPECT_EQ(condition(plan, "Failed")["message"],
            "the API server refused launcher pod pi-launcher: " + words);
  // Refused for another reason (a quota, a webhook that is down): tried again, not failed.
  const ReconcilePlan quota =
      run_refused(spec, status, pods, {{"launcher", "pi-launcher", 403, "exceeded quota"}});
  EXPECT_NE(quota.status["phase"], "Failed");
  EXPECT_EQ(created_names(quota), (Names{"pi-launcher"}));
}

TEST(Reconcile, WorkersTheServerRefusesAreSaidInWorkersFailingAndTriedAgain) {
  const JobSpec spec = job({{"replicas", 2}});
  const std::string words = ".spec.containers[0].resource: field not declared in schema";
  const ReconcilePlan refused = run_refused(spec, ready_status(1), running_job_pods(1),
                                            {{"worker", "pi-worker-1", 400, words}});
  EXPECT_EQ(condition(refused, "WorkersFailing")["status"], "True");
  EXPECT_EQ(condition(refused, "WorkersFailing")["reason"], "FailedCreate");
  EXPECT_EQ(condition(refused, "WorkersFailing")["message"],
            "the API server refused worker pod pi-worker-1 (400): " + words);
  EXPECT_EQ(created_names(refused), (Names{"pi-worker-1"}));
  EXPECT_NE(refused.status["phase"], "Failed");  // the launcher runs: the job goes on
  // A pass whose creates were accepted clears it.
  const ReconcilePlan cleared = run_refused(spec, refused.status, running_job_pods(2), {});
  EXPECT_EQ(condition(cleared, "WorkersFailing")["status"], "False");
  EXPECT_EQ(condition(cleared, "WorkersFailing")["reason"], "WorkersCreated");
}

}  // namespace
}  // namespace fiber::k8s::controller
