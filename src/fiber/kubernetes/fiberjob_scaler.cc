#include "fiber/kubernetes/fiberjob_scaler.h"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "fiber/errors.h"
#include "k8s/client/api_client.h"
#include "k8s/client/errors.h"
#include "k8s/client/kube_config.h"
#include "k8s/client/resource_ref.h"

namespace fiber::detail {
namespace {

using nlohmann::json;

// Optimistic concurrency: a write that loses a race reads again. Writers are the controller
// (status only), kubectl and this launcher, so a few attempts always suffice.
constexpr int kWriteAttempts = 8;

FiberJobScaler::Workers workers_of(const json& job) {
  FiberJobScaler::Workers workers;
  const json& spec = job.value("spec", json::object()).value("workers", json::object());
  workers.replicas = spec.value("replicas", 0);
  workers.min_replicas = spec.value("minReplicas", 0);
  workers.max_replicas = spec.value("maxReplicas", 0);
  return workers;
}

k8s::ClusterAccess cluster_access() {
  try {
    return k8s::load_default();
  } catch (const std::exception& e) {
    throw Error(std::string("fibermpi: cannot reach the Kubernetes API to ask for worker pods: ") +
                e.what());
  }
}

}  // namespace

FiberJobScaler::FiberJobScaler(std::string ns, std::string job)
    : ns_(std::move(ns)),
      job_(std::move(job)),
      client_(std::make_unique<k8s::ApiClient>(cluster_access())) {}

FiberJobScaler::~FiberJobScaler() = default;

FiberJobScaler::Workers FiberJobScaler::read() {
  return workers_of(client_->get(k8s::fiberjobs_ref(ns_), job_));
}

FiberJobScaler::Workers FiberJobScaler::grow(int held, int more) {
  const auto ref = k8s::fiberjobs_ref(ns_);
  for (int attempt = 1;; ++attempt) {
    Workers workers = workers_of(client_->get(ref, job_));
    // The scale subresource: the one write `kubectl scale` makes too, allowed to the launcher's
    // Role without letting it touch the rest of the spec. Decided from what it says now, and
    // written with its resourceVersion.
    json scale = client_->get(ref, job_, "scale");
    workers.replicas = scale.value("spec", json::object()).value("replicas", 0);
    const int wanted = std::min(std::max(workers.replicas, held + more), workers.max_replicas);
    if (workers.replicas >= wanted) return workers;
    scale["spec"]["replicas"] = wanted;
    try {
      client_->request("PUT", ref.object_path(job_, "scale"), {}, scale.dump());
      workers.replicas = wanted;
      return workers;
    } catch (const k8s::ApiError& e) {
      if (!e.is_conflict() || attempt >= kWriteAttempts) throw;
    }
  }
}

// The program's release list: ConfigMap NAME-release, key workersToDelete, a pod name a line.
// The controller creates it with the job; the launcher's Role may get and update it alone.
namespace {

constexpr const char* kReleaseListKey = "workersToDelete";

k8s::ResourceRef config_maps_ref(const std::string& ns) { return {"", "v1", "configmaps", ns}; }

std::string release_list_name(const std::string& job) {
  const char* named = std::getenv("FIBER_K8S_RELEASE_CONFIG_MAP");
  return named && *named ? named : job + "-release";
}

std::set<std::string> listed_names(const json& config_map) {
  std::set<std::string> names;
  const json::json_pointer pointer(std::string("/data/") + kReleaseListKey);
  if (!config_map.contains(pointer) || !config_map.at(pointer).is_string()) return names;
  const std::string text = config_map.at(pointer).get<std::string>();
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    // Trimmed as the controller reads it: a line a person edited is still that pod.
    const size_t first = text.find_first_not_of(" \t\r", begin);
    if (first < end) {
      const size_t last = text.find_last_not_of(" \t\r", end - 1);
      names.insert(text.substr(first, last - first + 1));
    }
    begin = end + 1;
  }
  return names;
}

std::string list_text(const std::set<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += name + "\n";
  return text;
}

}  // namespace

std::vector<std::string> FiberJobScaler::release(const std::vector<std::string>& pods, int held) {
  const auto jobs = k8s::fiberjobs_ref(ns_);
  const auto lists = config_maps_ref(ns_);
  const std::string list_name = release_list_name(job_);
  std::vector<std::string> released;
  int left = held;
  // First the list, then the size: the controller, seeing fewer replicas, deletes the listed
  // pods first, so it must see them listed by then (the other order could delete a busy pod).
  for (int attempt = 1;; ++attempt) {
    const Workers workers = workers_of(client_->get(jobs, job_));
    json list = client_->get(lists, list_name);
    std::set<std::string> names = listed_names(list);
    released.clear();
    left = held;
    // A pod listed already (an earlier release whose scale write failed) is released again:
    // this time its scale write completes the release.
    bool listed_now = false;
    for (const auto& pod : pods) {
      if (left <= workers.min_replicas) break;
      listed_now |= names.insert(pod).second;
      released.push_back(pod);
      --left;
    }
    if (released.empty()) return {};
    if (!listed_now) break;
    list["data"][kReleaseListKey] = list_text(names);
    try {
      client_->replace(lists, list);  // with its resourceVersion: a concurrent write is a 409
      break;
    } catch (const k8s::ApiError& e) {
      if (!e.is_conflict() || attempt >= kWriteAttempts) throw;
    }
  }
  // Replicas above the pods left would make the controller replace the released ones; below
  // (a `kubectl scale` down from outside) they stay as they are.
  for (int attempt = 1;; ++attempt) {
    json scale = client_->get(jobs, job_, "scale");
    const int replicas = scale.value("spec", json::object()).value("replicas", 0);
    if (replicas <= left) break;
    scale["spec"]["replicas"] = left;
    try {
      client_->request("PUT", jobs.object_path(job_, "scale"), {}, scale.dump());
      break;
    } catch (const k8s::ApiError& e) {
      if (!e.is_conflict() || attempt >= kWriteAttempts) throw;
    }
  }
  return released;
}

void FiberJobScaler::forget(const std::vector<std::string>& pods) {
  const auto lists = config_maps_ref(ns_);
  const std::string list_name = release_list_name(job_);
  for (int attempt = 1;; ++attempt) {
    json list = client_->get(lists, list_name);
    std::set<std::string> names = listed_names(list);
    bool changed = false;
    for (const auto& pod : pods) changed |= names.erase(pod) > 0;
    if (!changed) return;
    list["data"][kReleaseListKey] = list_text(names);
    try {
      client_->replace(lists, list);
      return;
    } catch (const k8s::ApiError& e) {
      if (!e.is_conflict() || attempt >= kWriteAttempts) throw;
    }
  }
}

}  // namespace fiber::detail
