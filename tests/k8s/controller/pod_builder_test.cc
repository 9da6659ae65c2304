#include "k8s/controller/pod_builder.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "k8s/controller/job_isolation.h"
#include "k8s/controller/launcher_access.h"

namespace fiber::k8s::controller {
namespace {

using nlohmann::json;

JobSpec job() {
  JobSpec spec;
  spec.name = "pi";
  spec.ns = "ns";
  spec.uid = "job-uid";
  spec.slots_per_worker = 2;
  spec.max_replicas = 4;
  spec.launcher_template = {
      {"metadata", {{"labels", {{"app", "pi"}, {"fibermpi.io/role", "mine"}}}}},
      {"spec",
       {{"restartPolicy", "OnFailure"},
        {"containers",
         {{{"name", "main"},
           {"image", "img"},
           {"env",
            {{{"name", "FIBER_SLOTS_PER_WORKER"}, {"value", "9"}},
             {{"name", "X"}, {"value", "$(FIBER_K8S_JOB)"}}}}}}}}}};
  spec.worker_template = {{"spec", {{"containers", {{{"name", "w"}, {"image", "img"}}}}}}};
  return spec;
}

const json kOwner = {{"apiVersion", "fibermpi.io/v1alpha1"},
                     {"kind", "FiberJob"},
                     {"name", "pi"},
                     {"uid", "job-uid"},
                     {"controller", true},
                     {"blockOwnerDeletion", true}};

std::map<std::string, json> env_of(const json& container) {
  std::map<std::string, json> env;
  for (const json& variable : container["env"]) env[variable["name"]] = variable;
  return env;
}

TEST(PodBuilder, HeadlessServiceSelectsTheJobsPods) {
  const json service = build_service(job());
  EXPECT_EQ(service["metadata"]["name"], "pi");
  EXPECT_EQ(service["metadata"]["namespace"], "ns");
  EXPECT_EQ(service["metadata"]["labels"], (json{{"fibermpi.io/job-name", "pi"}}));
  EXPECT_EQ(service["metadata"]["ownerReferences"], json::array({kOwner}));
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  EXPECT_EQ(service["spec"]["selector"], (json{{"fibermpi.io/job-name", "pi"}}));
}

TEST(PodBuilder, DefaultNameServicePod) {
  const json pod = build_name_service_pod(job(), "runtime:1");
  EXPECT_EQ(pod["metadata"]["name"], "pi-nameservice");
  EXPECT_EQ(pod["metadata"]["labels"],
            (json{{"fibermpi.io/job-name", "pi"}, {"fibermpi.io/role", "name-service"}}));
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  const json& container = pod["spec"]["containers"][0];
  EXPECT_EQ(container["image"], "runtime:1");
  EXPECT_EQ(container["command"],
            (json{"stdbuf", "-oL", "ompi-server", "--no-daemonize", "-r", "-"}));
  EXPECT_EQ(env_of(container)["OMPI_ALLOW_RUN_AS_ROOT"]["value"], "1");
  EXPECT_EQ(env_of(container)["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"]["value"], "1");
  // Pod Security "restricted", requests and limits for a ResourceQuota, no API token.
  EXPECT_EQ(pod["spec"]["securityContext"],
            (json{{"runAsNonRoot", true},
                  {"runAsUser", 1000},
                  {"runAsGroup", 1000},
                  {"seccompProfile", {{"type", "RuntimeDefault"}}}}));
  EXPECT_EQ(container["securityContext"],
            (json{{"allowPrivilegeEscalation", false}, {"capabilities", {{"drop", {"ALL"}}}}}));
  EXPECT_EQ(container["resources"], (json{{"requests", {{"cpu", "50m"}, {"memory", "64Mi"}}},
                                          {"limits", {{"cpu", "500m"}, {"memory", "256Mi"}}}}));
  EXPECT_EQ(pod["spec"]["automountServiceAccountToken"], false);
}

TEST(PodBuilder, NameServiceTemplateOverridesTheDefault) {
  JobSpec spec = job();
  spec.name_service_template = {{"spec", {{"containers", {{{"name", "ns"}, {"image", "own"}}}}}}};
  const json pod = build_name_service_pod(spec, "runtime:1");
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "own");
  EXPECT_EQ(pod["metadata"]["labels"]["fibermpi.io/role"], "name-service");
}

TEST(PodBuilder, LauncherFromItsTemplateWithOurLabelsAndEnvironment) {
  const json pod = build_launcher_pod(job(), "1.0;tcp://10.0.0.1:1");
  EXPECT_EQ(pod["metadata"]["name"], "pi-launcher");
  EXPECT_EQ(
      pod["metadata"]["labels"],
      (json{{"app", "pi"}, {"fibermpi.io/job-name", "pi"}, {"fibermpi.io/role", "launcher"}}));
  EXPECT_EQ(pod["metadata"]["ownerReferences"], json::array({kOwner}));
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(pod["spec"]["hostname"], "pi-launcher");
  EXPECT_EQ(pod["spec"]["subdomain"], "pi");
  const json& env = pod["spec"]["containers"][0]["env"];
  // Ours first (so the template's can refer to them), the template's own value wins.
  EXPECT_EQ(env, (json{{{"name", "FIBER_K8S_JOB"}, {"value", "pi"}},
                       {{"name", "FIBER_K8S_NAMESPACE"}, {"value", "ns"}},
                       {{"name", "FIBER_K8S_ROLE"}, {"value", "launcher"}},
                       {{"name", "FIBER_NAME_SERVICE_URI"}, {"value", "1.0;tcp://10.0.0.1:1"}},
                       {{"name", "FIBER_K8S_POD_NAME"},
                        {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
                       {{"name", "FIBER_K8S_POD_UID"},
                        {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.uid"}}}}}},
                       {{"name", "FIBER_K8S_POD_IP"},
                        {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}},
                       {{"name", "FIBER_K8S_RELEASE_CONFIG_MAP"}, {"value", "pi-release"}},
                       {{"name", "FIBER_SLOTS_PER_WORKER"}, {"value", "9"}},
                       {{"name", "X"}, {"value", "$(FIBER_K8S_JOB)"}},
                       {{"name", "FIBER_JOIN_TOKEN_FILE"},
                        {"value", "/var/run/secrets/fibermpi.io/join/token"}}}));
}

TEST(PodBuilder, TheWorkerTemplatesResourcesReachTheProgram) {
  JobSpec spec = job();
  spec.worker_template["spec"]["containers"][0]["resources"] = {
      {"requests", {{"cpu", "1"}, {"memory", "2Gi"}}},
      {"limits", {{"cpu", "1500m"}, {"nvidia.com/gpu", "2"}}}};
  // Limits first, else requests; GPUs by their extended resource's name.
  for (const json& pod : {build_launcher_pod(spec, "u"), build_worker_pod(spec, 0, "u")}) {
    auto env = env_of(pod["spec"]["containers"][0]);
    EXPECT_EQ(env["FIBER_K8S_WORKER_CPU"]["value"], "1500m");
    EXPECT_EQ(env["FIBER_K8S_WORKER_MEMORY"]["value"], "2Gi");
    EXPECT_EQ(env["FIBER_K8S_WORKER_GPUS"]["value"], "2");
  }
  // A template that leaves them open sets none.
  auto env = env_of(build_launcher_pod(job(), "u")["spec"]["containers"][0]);
  EXPECT_EQ(env.count("FIBER_K8S_WORKER_CPU") + env.count("FIBER_K8S_WORKER_MEMORY") +
                env.count("FIBER_K8S_WORKER_GPUS"),
            0u);
}

TEST(PodBuilder, WorkerCarriesItsIndex) {
  const json pod = build_worker_pod(job(), 7, "u");
  EXPECT_EQ(pod["metadata"]["name"], "pi-worker-7");
  EXPECT_EQ(pod["metadata"]["labels"], (json{{"fibermpi.io/job-name", "pi"},
                                             {"fibermpi.io/role", "worker"},
                                             {"fibermpi.io/worker-index", "7"}}));
  auto env = env_of(pod["spec"]["containers"][0]);
  EXPECT_EQ(env["FIBER_K8S_WORKER_INDEX"]["value"], "7");
  EXPECT_EQ(env["FIBER_K8S_ROLE"]["value"], "worker");
  EXPECT_EQ(env["FIBER_SLOTS_PER_WORKER"]["value"], "2");
  EXPECT_EQ(env["FIBER_NAME_SERVICE_URI"]["value"], "u");
  EXPECT_EQ(env.size(), 10u);  // with FIBER_JOIN_TOKEN_FILE
  EXPECT_EQ(env["FIBER_K8S_POD_UID"]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.uid");
}

TEST(PodBuilder, LauncherRunsAsTheJobsAccountAndReportsWhyItFailed) {
  json pod = build_launcher_pod(job(), "u");
  EXPECT_EQ(pod["spec"]["serviceAccountName"], "pi-launcher");
  EXPECT_FALSE(pod["spec"].contains("automountServiceAccountToken"));
  EXPECT_EQ(pod["spec"]["containers"][0]["terminationMessagePolicy"], "FallbackToLogsOnError");
  // The template's own choices win.
  JobSpec own = job();
  own.launcher_template["spec"]["serviceAccountName"] = "mine";
  own.launcher_template["spec"]["containers"][0]["terminationMessagePolicy"] = "File";
  pod = build_launcher_pod(own, "u");
  EXPECT_EQ(pod["spec"]["serviceAccountName"], "mine");
  EXPECT_EQ(pod["spec"]["containers"][0]["terminationMessagePolicy"], "File");
  // Workers do not talk to the API server: no account of their own.
  EXPECT_FALSE(build_worker_pod(job(), 0, "u")["spec"].contains("serviceAccountName"));
}

// The volume and the mount of `name` in `pod` (its first container), null when it has none.
std::pair<json, json> volume_and_mount(const json& pod, const std::string& name) {
  std::pair<json, json> found;
  for (const json& volume : pod["spec"].value("volumes", json::array()))
    if (volume["name"] == name) found.first = volume;
  for (const json& mount : pod["spec"]["containers"][0].value("volumeMounts", json::array()))
    if (mount["name"] == name) found.second = mount;
  return found;
}

TEST(PodBuilder, SpecConfigIsMountedIntoTheFirstContainerOfLauncherAndWorkers) {
  JobSpec spec = job();
  spec.launcher_template["spec"]["containers"].push_back({{"name", "sidecar"}, {"image", "s"}});
  spec.config = "pool_size: 2\n";
  for (const json& pod : {build_launcher_pod(spec, "u"), build_worker_pod(spec, 0, "u")}) {
    const auto [volume, mount] = volume_and_mount(pod, "fibermpi-config");
    EXPECT_EQ(volume, (json{{"name", "fibermpi-config"}, {"configMap", {{"name", "pi-config"}}}}));
    EXPECT_EQ(
        mount,
        (json{{"name", "fibermpi-config"}, {"mountPath", "/etc/fibermpi"}, {"readOnly", true}}));
    EXPECT_EQ(env_of(pod["spec"]["containers"][0])["FIBER_CONFIG"]["value"],
              "/etc/fibermpi/fiber.yaml");
  }
  EXPECT_FALSE(build_launcher_pod(spec, "u")["spec"]["containers"][1].contains("volumeMounts"));
  // Without spec.config: no volume, no mount, no FIBER_CONFIG.
  for (const json& pod : {build_launcher_pod(job(), "u"), build_worker_pod(job(), 0, "u")}) {
    const auto [volume, mount] = volume_and_mount(pod, "fibermpi-config");
    EXPECT_TRUE(volume.is_null());
    EXPECT_TRUE(mount.is_null());
    EXPECT_FALSE(env_of(pod["spec"]["containers"][0]).contains("FIBER_CONFIG"));
  }
}

TEST(PodBuilder, TheJoinTokenIsMountedIntoTheLauncherAndTheWorkersOnly) {
  JobSpec spec = job();
  for (const json& pod : {build_launcher_pod(spec, "u"), build_worker_pod(spec, 0, "u")}) {
    const auto [volume, mount] = volume_and_mount(pod, "fibermpi-join-token");
    EXPECT_EQ(volume, (json{{"name", "fibermpi-join-token"},
                            {"secret", {{"secretName", "pi-join-token"}}}}));
    EXPECT_EQ(mount, (json{{"name", "fibermpi-join-token"},
                           {"mountPath", "/var/run/secrets/fibermpi.io/join"},
                           {"readOnly", true}}));
    EXPECT_EQ(env_of(pod["spec"]["containers"][0])["FIBER_JOIN_TOKEN_FILE"]["value"],
              "/var/run/secrets/fibermpi.io/join/token");
  }
  // The name service never joins anyone: it gets no token.
  EXPECT_FALSE(build_name_service_pod(spec, "img")["spec"].contains("volumes"));
  // A template's own FIBER_JOIN_TOKEN_FILE wins (its token mounted elsewhere).
  spec.worker_template["spec"]["containers"][0]["env"] = {
      {{"name", "FIBER_JOIN_TOKEN_FILE"}, {"value", "/mine"}}};
  const json worker = build_worker_pod(spec, 1, "u");
  EXPECT_EQ(env_of(worker["spec"]["containers"][0])["FIBER_JOIN_TOKEN_FILE"]["value"], "/mine");
}

TEST(PodBuilder, AWorkerWithoutACommandRunsTheLaunchersProgram) {
  JobSpec spec = job();
  spec.launcher_template["spec"]["containers"][0]["command"] = {"/opt/fibermpi/bin/es"};
  spec.launcher_template["spec"]["containers"][0]["args"] = {"--tasks", "2000"};
  json worker = build_worker_pod(spec, 0, "u")["spec"]["containers"][0];
  EXPECT_EQ(worker["command"], (json{"/opt/fibermpi/bin/es"}));
  EXPECT_EQ(worker["args"], (json{"--tasks", "2000"}));
  // Its own command (or its own args) stays.
  spec.worker_template["spec"]["containers"][0]["args"] = {"--quiet"};
  worker = build_worker_pod(spec, 0, "u")["spec"]["containers"][0];
  EXPECT_EQ(worker["command"], (json{"/opt/fibermpi/bin/es"}));
  EXPECT_EQ(worker["args"], (json{"--quiet"}));
  spec.worker_template["spec"]["containers"][0]["command"] = {"own"};
  EXPECT_EQ(build_worker_pod(spec, 0, "u")["spec"]["containers"][0]["command"], (json{"own"}));
}

TEST(PodBuilder, AWorkerWithNeitherCommandNorArgsTakesTheArgsOfALauncherWithArgsAlone) {
  // The launcher keeps its image's ENTRYPOINT (tini) and names its program in args.
  JobSpec spec = job();
  spec.launcher_template["spec"]["containers"][0]["args"] = {"python", "/opt/es.py", "--workers",
                                                             "4"};
  json worker = build_worker_pod(spec, 0, "u")["spec"]["containers"][0];
  EXPECT_FALSE(worker.contains("command"));
  EXPECT_EQ(worker["args"], (json{"python", "/opt/es.py", "--workers", "4"}));
  // A worker naming its own args keeps them; one naming a command takes nothing.
  spec.worker_template["spec"]["containers"][0]["args"] = {"03_elastic_pool"};
  worker = build_worker_pod(spec, 0, "u")["spec"]["containers"][0];
  EXPECT_EQ(worker["args"], (json{"03_elastic_pool"}));
  EXPECT_FALSE(worker.contains("command"));
  spec.worker_template["spec"]["containers"][0].erase("args");
  spec.worker_template["spec"]["containers"][0]["command"] = {"own"};
  worker = build_worker_pod(spec, 0, "u")["spec"]["containers"][0];
  EXPECT_EQ(worker["command"], (json{"own"}));
  EXPECT_FALSE(worker.contains("args"));
}

TEST(PodBuilder, WorkersGetNoApiTokenUnlessTheirTemplateAsks) {
  EXPECT_EQ(build_worker_pod(job(), 0, "uri")["spec"]["automountServiceAccountToken"], false);
  JobSpec spec = job();
  spec.worker_template["spec"]["automountServiceAccountToken"] = true;
  EXPECT_EQ(build_worker_pod(spec, 0, "uri")["spec"]["automountServiceAccountToken"], true);
  // The launcher keeps its token: it asks the API for pods.
  EXPECT_FALSE(build_launcher_pod(job(), "uri")["spec"].contains("automountServiceAccountToken"));
}

TEST(PodBuilder, WorkersNeverRestartInPlace) {
  JobSpec spec = job();
  spec.worker_template["spec"]["restartPolicy"] = "Always";
  EXPECT_EQ(build_worker_pod(spec, 0, "u")["spec"]["restartPolicy"], "Never");
}

json toleration(const char* key, std::int64_t seconds) {
  return {{"key", key},
          {"operator", "Exists"},
          {"effect", "NoExecute"},
          {"tolerationSeconds", seconds}};
}

TEST(PodBuilder, EveryPodLeavesALostNodeAfterTheJobsTolerationNotTheClusters300s) {
  JobSpec spec = job();
  const json expected = {toleration("node.kubernetes.io/not-ready", 30),
                         toleration("node.kubernetes.io/unreachable", 30)};
  EXPECT_EQ(build_launcher_pod(spec, "u")["spec"]["tolerations"], expected);
  EXPECT_EQ(build_worker_pod(spec, 1, "u")["spec"]["tolerations"], expected);
  EXPECT_EQ(build_name_service_pod(spec, "img")["spec"]["tolerations"], expected);
  spec.node_loss_toleration_seconds = 5;
  // A template's own tolerations stay; one of its own for a lost node's taint wins over ours.
  const json gpu = {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
  const json patient = toleration("node.kubernetes.io/unreachable", 600);
  spec.worker_template["spec"]["tolerations"] = {gpu, patient};
  EXPECT_EQ(build_worker_pod(spec, 1, "u")["spec"]["tolerations"],
            (json{gpu, patient, toleration("node.kubernetes.io/not-ready", 5)}));
  // A toleration of every NoExecute taint (no key, operator Exists) needs none of ours.
  spec.worker_template["spec"]["tolerations"] = {{{"operator", "Exists"}}};
  EXPECT_EQ(build_worker_pod(spec, 1, "u")["spec"]["tolerations"].size(), 1u);
}

TEST(LauncherAccess, AccountRoleAndBindingLimitedToTheJob) {
  const json account = build_launcher_service_account(job());
  EXPECT_EQ(account["kind"], "ServiceAccount");
  EXPECT_EQ(account["metadata"]["name"], "pi-launcher");
  EXPECT_EQ(account["metadata"]["namespace"], "ns");
  EXPECT_EQ(account["metadata"]["ownerReferences"], json::array({kOwner}));

  const json role = build_launcher_role(job());
  EXPECT_EQ(role["apiVersion"], "rbac.authorization.k8s.io/v1");
  EXPECT_EQ(role["metadata"]["name"], "pi-launcher");
  EXPECT_EQ(role["metadata"]["ownerReferences"], json::array({kOwner}));
  EXPECT_EQ(role["rules"], (json{{{"apiGroups", {"fibermpi.io"}},
                                  {"resources", {"fiberjobs"}},
                                  {"resourceNames", {"pi"}},
                                  {"verbs", {"get"}}},
                                 {{"apiGroups", {""}},
                                  {"resources", {"configmaps"}},
                                  {"resourceNames", {"pi-release"}},
                                  {"verbs", {"get", "update"}}}}));

  const json binding = build_launcher_role_binding(job());
  EXPECT_EQ(
      binding["roleRef"],
      (json{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "pi-launcher"}}));
  EXPECT_EQ(binding["subjects"],
            (json{{{"kind", "ServiceAccount"}, {"name", "pi-launcher"}, {"namespace", "ns"}}}));
  EXPECT_EQ(binding["metadata"]["ownerReferences"], json::array({kOwner}));
}

TEST(JobIsolation, TheJoinTokenSecretIsTheJobsAndHoldsTheToken) {
  const json secret = build_join_token_secret(job(), "0123456789abcdef0123");
  EXPECT_EQ(secret["apiVersion"], "v1");
  EXPECT_EQ(secret["kind"], "Secret");
  EXPECT_EQ(secret["type"], "Opaque");
  EXPECT_EQ(secret["metadata"]["name"], "pi-join-token");
  EXPECT_EQ(secret["metadata"]["namespace"], "ns");
  EXPECT_EQ(secret["metadata"]["labels"], (json{{"fibermpi.io/job-name", "pi"}}));
  EXPECT_EQ(secret["metadata"]["ownerReferences"], json::array({kOwner}));
  EXPECT_EQ(secret["stringData"], (json{{"token", "0123456789abcdef0123"}}));
}

TEST(JobIsolation, ARandomTokenIs256BitsInHexAndNeverTheSame) {
  const std::string first = random_join_token();
  const std::string second = random_join_token();
  EXPECT_EQ(first.size(), 64u);
  EXPECT_TRUE(std::all_of(first.begin(), first.end(),
                          [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }));
  EXPECT_NE(first, second);
}

TEST(JobIsolation, TheNetworkPolicyAdmitsOnlyTheJobsOwnPods) {
  const json policy = build_network_policy(job());
  EXPECT_EQ(policy["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(policy["kind"], "NetworkPolicy");
  EXPECT_EQ(policy["metadata"]["name"], "pi");
  EXPECT_EQ(policy["metadata"]["ownerReferences"], json::array({kOwner}));
  const json same_job = {{"matchLabels", {{"fibermpi.io/job-name", "pi"}}}};
  EXPECT_EQ(policy["spec"], (json{{"podSelector", same_job},
                                  {"policyTypes", {"Ingress"}},
                                  {"ingress", {{{"from", {{{"podSelector", same_job}}}}}}}}));
}

// A NetworkPolicy of the job's namespace, as a cluster administrator writes one.
json policy(json pod_selector, json policy_types) {
  return {{"metadata", {{"name", "deny"}, {"namespace", "ns"}}},
          {"spec",
           {{"podSelector", std::move(pod_selector)}, {"policyTypes", std::move(policy_types)}}}};
}

TEST(JobIsolation, APolicyIsolatesTheEgressOfTheJobsPodsItSelectsWhenItNamesEgress) {
  using Roles = std::vector<std::string>;
  const Roles all = {"launcher", "name-service", "worker"};
  const auto roles = [](const json& p) { return job_roles_with_egress_isolated(p, job()); };
  // A namespace's default deny of egress, or of both.
  EXPECT_EQ(roles(policy(json::object(), {"Egress"})), all);
  EXPECT_EQ(roles(policy(json::object(), {"Ingress", "Egress"})), all);
  // Ingress alone leaves egress open.
  EXPECT_EQ(roles(policy(json::object(), {"Ingress"})), Roles{});
  // Selected by a label of the launcher's template ("app": "pi"), by the controller's labels (a
  // template's own role label is overridden), by an expression.
  EXPECT_EQ(roles(policy({{"matchLabels", {{"app", "pi"}}}}, {"Egress"})), Roles{"launcher"});
  EXPECT_EQ(roles(policy({{"matchLabels", {{"fibermpi.io/role", "worker"}}}}, {"Egress"})),
            Roles{"worker"});
  EXPECT_EQ(roles(policy({{"matchLabels", {{"fibermpi.io/role", "mine"}}}}, {"Egress"})), Roles{});
  EXPECT_EQ(
      roles(policy(
          {{"matchExpressions",
            {{{"key", "fibermpi.io/job-name"}, {"operator", "In"}, {"values", {"a", "pi"}}}}}},
          {"Egress"})),
      all);
  // Other pods: no.
  EXPECT_EQ(roles(policy({{"matchLabels", {{"app", "web"}}}}, {"Egress"})), Roles{});
  EXPECT_EQ(roles(policy({{"matchExpressions",
                           {{{"key", "fibermpi.io/job-name"}, {"operator", "DoesNotExist"}}}}},
                         {"Egress"})),
            Roles{});
  // Without policyTypes (an object the API server has not defaulted): a non-empty egress section
  // counts, as the API server's defaulting would have it.
  json bare = policy(json::object(), json());
  bare["spec"].erase("policyTypes");
  EXPECT_EQ(roles(bare), Roles{});
  bare["spec"]["egress"] = json::array();
  EXPECT_EQ(roles(bare), Roles{});
  bare["spec"]["egress"] = json::array({json::object()});
  EXPECT_EQ(roles(bare), all);
}

TEST(JobIsolation, SelectorsMatchAsTheApiDefinesThem) {
  const std::map<std::string, std::string> labels = {{"a", "1"}, {"b", "2"}};
  EXPECT_TRUE(selector_matches(json::object(), labels));
  EXPECT_FALSE(selector_matches(json(), labels));  // a null selector selects nothing
  EXPECT_TRUE(selector_matches({{"matchLabels", {{"a", "1"}, {"b", "2"}}}}, labels));
  EXPECT_FALSE(selector_matches({{"matchLabels", {{"a", "1"}, {"c", "3"}}}}, labels));
  const auto expression = [](const char* key, const char* op, json values = json::array()) {
    return json{{"matchExpressions", {{{"key", key}, {"operator", op}, {"values", values}}}}};
  };
  EXPECT_TRUE(selector_matches(expression("a", "In", {"0", "1"}), labels));
  EXPECT_FALSE(selector_matches(expression("a", "In", {"0"}), labels));
  EXPECT_TRUE(selector_matches(expression("a", "NotIn", {"0"}), labels));
  EXPECT_TRUE(selector_matches(expression("c", "NotIn", {"0"}), labels));
  EXPECT_TRUE(selector_matches(expression("b", "Exists"), labels));
  EXPECT_FALSE(selector_matches(expression("b", "DoesNotExist"), labels));
  EXPECT_FALSE(selector_matches(expression("a", "Gt", {"0"}), labels));
}

TEST(JobIsolation, TheEgressPolicyLetsThePodsReachEachOtherDnsAndTheApiServerOnly) {
  const json egress = build_egress_network_policy(
      job(), {"launcher", "worker"},
      {parse_egress_peer("10.0.0.1:6443"), parse_egress_peer("[fd00::1]:443")});
  EXPECT_EQ(egress["kind"], "NetworkPolicy");
  EXPECT_EQ(egress["metadata"]["name"], "pi.egress");
  EXPECT_EQ(egress["metadata"]["ownerReferences"], json::array({kOwner}));
  const json same_job = {{"matchLabels", {{"fibermpi.io/job-name", "pi"}}}};
  const json dns_ports = {{{"protocol", "UDP"}, {"port", 53}}, {{"protocol", "TCP"}, {"port", 53}}};
  EXPECT_EQ(egress["spec"],
            (json{{"podSelector",
                   {{"matchLabels", {{"fibermpi.io/job-name", "pi"}}},
                    {"matchExpressions",
                     {{{"key", "fibermpi.io/role"},
                       {"operator", "In"},
                       {"values", {"launcher", "worker"}}}}}}},
                  {"policyTypes", {"Egress"}},
                  {"egress",
                   {{{"to", {{{"podSelector", same_job}}}}},
                    {{"to",
                      {{{"namespaceSelector",
                         {{"matchLabels", {{"kubernetes.io/metadata.name", "kube-system"}}}}},
                        {"podSelector", {{"matchLabels", {{"k8s-app", "kube-dns"}}}}}}}},
                     {"ports", dns_ports}},
                    {{"to", {{{"ipBlock", {{"cidr", "10.0.0.1/32"}}}}}},
                     {"ports", {{{"protocol", "TCP"}, {"port", 6443}}}}},
                    {{"to", {{{"ipBlock", {{"cidr", "fd00::1/128"}}}}}},
                     {"ports", {{{"protocol", "TCP"}, {"port", 443}}}}}}}}));
}

TEST(JobIsolation, ApiServerPeersAreReadAsAddressesOrBlocksWithAPort) {
  EXPECT_EQ(parse_egress_peer("10.1.2.3:443"), (EgressPeer{"10.1.2.3/32", 443}));
  EXPECT_EQ(parse_egress_peer("10.1.2.3/24:6443"), (EgressPeer{"10.1.2.0/24", 6443}));
  EXPECT_EQ(parse_egress_peer("[2001:db8::7]:443"), (EgressPeer{"2001:db8::7/128", 443}));
  EXPECT_EQ(parse_egress_peer("2001:db8::7/64:443"), (EgressPeer{"2001:db8::/64", 443}));
  for (const char* bad : {"10.1.2.3", "10.1.2.3:0", "10.1.2.3:70000", "host:443", "10.1.2.3/33:443",
                          ":443", "10.1.2.3:x", "10.0.0.0/:443", "fd00::1:443"}) {
    EXPECT_THROW(parse_egress_peer(bad), std::invalid_argument) << bad;
  }
  const json slice = {{"endpoints",
                       {{{"addresses", {"192.168.0.10"}}, {"conditions", {{"ready", true}}}},
                        {{"addresses", {"192.168.0.11"}}, {"conditions", {{"ready", false}}}},
                        {{"addresses", {"fd00::10"}}}}},
                      {"ports", {{{"name", "https"}, {"port", 6443}, {"protocol", "TCP"}}}}};
  EXPECT_EQ(egress_peers_of_endpoint_slice(slice),
            (std::vector<EgressPeer>{{"192.168.0.10/32", 6443}, {"fd00::10/128", 6443}}));
}

}  // namespace
}  // namespace fiber::k8s::controller
