#include "fiber/kubernetes/fiberjob_scaler.h"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "fiber/errors.h"
#include "k8s/client/api_client.h"
#include "k8s/client/errors.h"
#include "k8s/client/kube_config.h"
#include "k8s/client/release_request.h"
#include "k8s/client/resource_ref.h"

namespace fiber::internal {
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

int FiberJobScaler::Workers::kept() const {
  return std::min(std::max({replicas, requested, min_replicas}), max_replicas);
}

int FiberJobScaler::Workers::floor() const {
  return std::min(std::max(replicas, min_replicas), max_replicas);
}

// The program's side of the job's size: ConfigMap NAME-release, key workersRequested (a count) and
// key workersToDelete (a pod name a line). The controller creates it with the job; the launcher's
// Role may get and update it alone.
namespace {

k8s::ResourceRef config_maps_ref(const std::string& ns) { return {"", "v1", "configmaps", ns}; }

std::string release_list_name(const std::string& job) {
  const char* named = std::getenv("FIBER_K8S_RELEASE_CONFIG_MAP");
  return named && *named ? named : job + "-release";
}

// The request and the list as the controller reads them (k8s/client/release_request.h): what it
// refuses (and warns of) counts for nothing here either.
int requested_of(const json& config_map) {
  std::vector<std::string> refused;
  return k8s::parse_requested_workers(config_map, refused);
}

std::set<std::string> listed_names(const json& config_map) {
  std::vector<std::string> refused;
  return k8s::parse_release_list(config_map, refused);
}

}  // namespace

FiberJobScaler::Workers FiberJobScaler::read(json& list) {
  Workers workers = workers_of(client_->get(k8s::fiberjobs_ref(ns_), job_));
  list = client_->get(config_maps_ref(ns_), release_list_name(job_));
  workers.requested = requested_of(list);
  return workers;
}

FiberJobScaler::Workers FiberJobScaler::read() {
  json list;
  return read(list);
}

FiberJobScaler::Workers FiberJobScaler::grow(int held, int more) {
  for (int attempt = 1;; ++attempt) {
    json list;
    Workers workers = read(list);
    const int wanted = std::min(std::max(workers.requested, held + more), workers.max_replicas);
    if (workers.requested >= wanted) return workers;
    list["data"][k8s::kRequestedWorkersKey] = std::to_string(wanted);
    try {
      client_->replace(config_maps_ref(ns_), list);  // with its resourceVersion: a race is a 409
      workers.requested = wanted;
      return workers;
    } catch (const k8s::ApiError& e) {
      if (!e.is_conflict() || attempt >= kWriteAttempts) throw;
    }
  }
}

std::vector<std::string> FiberJobScaler::release(const std::vector<std::string>& pods, int held) {
  for (int attempt = 1;; ++attempt) {
    json list;
    const Workers workers = read(list);
    std::set<std::string> names = listed_names(list);
    std::vector<std::string> released;
    int left = held;
    // A pod listed already (an earlier release whose write failed) is released again.
    bool listed_now = false;
    for (const auto& pod : pods) {
      if (left <= workers.floor()) break;
      listed_now |= names.insert(pod).second;
      released.push_back(pod);
      --left;
    }
    if (released.empty()) return {};
    // The list and the lower request in one write: the controller, seeing fewer pods wanted,
    // deletes the listed ones first, so it must never see the count without the names (it could
    // delete a busy pod) nor the names without the count (it would replace them).
    const int requested = std::min(workers.requested, left);
    if (!listed_now && requested == workers.requested) return released;
    list["data"][k8s::kReleaseListKey] = k8s::release_list_text(names);
    list["data"][k8s::kRequestedWorkersKey] = std::to_string(requested);
    try {
      client_->replace(config_maps_ref(ns_), list);
      return released;
    } catch (const k8s::ApiError& e) {
      if (!e.is_conflict() || attempt >= kWriteAttempts) throw;
    }
  }
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
    list["data"][k8s::kReleaseListKey] = k8s::release_list_text(names);
    try {
      client_->replace(lists, list);
      return;
    } catch (const k8s::ApiError& e) {
      if (!e.is_conflict() || attempt >= kWriteAttempts) throw;
    }
  }
}

}  // namespace fiber::internal
