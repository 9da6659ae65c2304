#include "fiber/master/fiberjob_scaler.h"

#include <algorithm>
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
  for (const auto& name : spec.value("workersToDelete", json::array()))
    if (name.is_string()) workers.to_delete.push_back(name.get<std::string>());
  return workers;
}

std::string resource_version(const json& object) {
  return object.at("metadata").at("resourceVersion").get<std::string>();
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

std::vector<std::string> FiberJobScaler::release(const std::vector<std::string>& pods, int held) {
  const auto ref = k8s::fiberjobs_ref(ns_);
  for (int attempt = 1;; ++attempt) {
    json job = client_->get(ref, job_);
    Workers workers = workers_of(job);
    std::set<std::string> names(workers.to_delete.begin(), workers.to_delete.end());
    std::vector<std::string> released;
    int left = held;
    for (const auto& pod : pods) {
      if (left <= workers.min_replicas) break;
      if (names.insert(pod).second) {
        released.push_back(pod);
        --left;
      }
    }
    if (released.empty()) return {};
    // Replicas above the pods left would make the controller replace the released ones; below
    // (a `kubectl scale` down from outside) they stay as they are.
    const int replicas = std::min(workers.replicas, left);
    json patch = {
        {"metadata", {{"resourceVersion", resource_version(job)}}},
        {"spec",
         {{"workers",
           {{"replicas", replicas},
            {"workersToDelete", std::vector<std::string>(names.begin(), names.end())}}}}}};
    try {
      client_->patch(ref, job_, patch);
      return released;
    } catch (const k8s::ApiError& e) {
      if (!e.is_conflict() || attempt >= kWriteAttempts) throw;
    }
  }
}

void FiberJobScaler::forget(const std::vector<std::string>& pods) {
  const auto ref = k8s::fiberjobs_ref(ns_);
  for (int attempt = 1;; ++attempt) {
    json job = client_->get(ref, job_);
    Workers workers = workers_of(job);
    std::vector<std::string> kept;
    for (const auto& name : workers.to_delete)
      if (std::find(pods.begin(), pods.end(), name) == pods.end()) kept.push_back(name);
    if (kept.size() == workers.to_delete.size()) return;
    json patch = {{"metadata", {{"resourceVersion", resource_version(job)}}},
                  {"spec", {{"workers", {{"workersToDelete", kept}}}}}};
    try {
      client_->patch(ref, job_, patch);
      return;
    } catch (const k8s::ApiError& e) {
      if (!e.is_conflict() || attempt >= kWriteAttempts) throw;
    }
  }
}

}  // namespace fiber::detail
