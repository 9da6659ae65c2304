// The launcher's requests to Kubernetes about its own FiberJob: how many worker pods it asks for
// (the scale subresource) and which pods it releases (listed in the job's release ConfigMap,
// NAME-release: the launcher's Role may not write the job itself). Every write
// carries the resourceVersion it was computed from, so a concurrent `kubectl scale` or controller
// is never overwritten: on a conflict it reads again and recomputes. Runs as the job's own
// service account, whose Role allows exactly these requests on this one FiberJob. No MPI.
// Internal.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace fiber::k8s {
class ApiClient;
}

namespace fiber::detail {

class FiberJobScaler {
 public:
  /// The worker side of the FiberJob's spec.
  struct Workers {
    int replicas = 0;
    int min_replicas = 0;
    int max_replicas = 0;
  };

  /// Talks to the API server of the pod this runs in (its service account), or, outside a pod,
  /// of the current kubeconfig context. Throws fiber::Error when neither can be loaded.
  FiberJobScaler(std::string ns, std::string job);
  ~FiberJobScaler();
  FiberJobScaler(const FiberJobScaler&) = delete;
  FiberJobScaler& operator=(const FiberJobScaler&) = delete;

  /// The job's workers as the API server has them now.
  Workers read();
  /// Asks for `more` worker pods beyond the `held` ones whose workers joined: replicas becomes
  /// max(replicas, held + more), at most maxReplicas, computed from the scale subresource as read
  /// just before the write (so a `kubectl scale` meanwhile is neither undone nor doubled).
  /// Returns the spec as written (or as found, when it asks for enough already).
  Workers grow(int held, int more);
  /// Lists `pods` (of the `held` pods whose workers joined) in the release ConfigMap, then lowers
  /// replicas to at most the pods left, so the controller deletes exactly those and replaces none
  /// of them; pods that would leave fewer than minReplicas stay. Returns the pods released.
  std::vector<std::string> release(const std::vector<std::string>& pods, int held);
  /// Takes `pods` (released earlier and gone now) out of the release ConfigMap.
  void forget(const std::vector<std::string>& pods);

  /// "FiberJob <ns>/<name>"
  std::string describe() const { return "FiberJob " + ns_ + "/" + job_; }

 private:
  const std::string ns_;
  const std::string job_;
  std::unique_ptr<k8s::ApiClient> client_;
};

}  // namespace fiber::detail
