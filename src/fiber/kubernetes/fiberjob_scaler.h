// The launcher's requests to Kubernetes about its own FiberJob: how many worker pods it asks for
// and which pods it releases, both in the job's ConfigMap NAME-release (keys workersRequested and
// workersToDelete). The launcher's Role may read the job but not write it: spec.workers.replicas
// belongs to people and autoscalers (kubectl scale, an HPA), and the controller keeps the larger
// of the two counts, so the program and an HPA never undo each other. Every write carries the
// resourceVersion it was computed from: on a conflict it reads again and recomputes. Runs as the
// job's own service account, whose Role allows exactly these requests on this one FiberJob. No
// MPI. Internal.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fiber::k8s {
class ApiClient;
}

namespace fiber::internal {

class FiberJobScaler {
 public:
  /// The worker side of the FiberJob: its spec and the program's request.
  struct Workers {
    int replicas = 0;   ///< spec.workers.replicas: what people and autoscalers ask for.
    int requested = 0;  ///< workersRequested: what the program asks for.
    int min_replicas = 0;
    int max_replicas = 0;
    /// The worker pods the controller keeps: max(replicas, requested) within [min, max].
    int kept() const;
    /// Fewest pods the program's releases may leave: releasing below what people, an autoscaler
    /// or minReplicas keep would only have the controller replace the pods released.
    int floor() const;
  };

  /// Talks to the API server of the pod this runs in (its service account), or, outside a pod,
  /// of the current kubeconfig context. Throws fiber::Error when neither can be loaded.
  FiberJobScaler(std::string ns, std::string job);
  ~FiberJobScaler();
  FiberJobScaler(const FiberJobScaler&) = delete;
  FiberJobScaler& operator=(const FiberJobScaler&) = delete;

  /// The job's workers as the API server has them now.
  Workers read();
  /// Asks for `more` worker pods beyond the `held` ones whose workers joined: workersRequested
  /// becomes max(workersRequested, held + more), at most maxReplicas (pods asked for earlier and
  /// still coming are not asked for twice). Returns the workers as written (or as found, when the
  /// program asks for enough already).
  Workers grow(int held, int more);
  /// Lists `pods` (of the `held` pods whose workers joined) in the release ConfigMap and lowers
  /// workersRequested to at most the pods left, in one write, so the controller deletes exactly
  /// those and replaces none of them; pods that would leave fewer than floor() stay. Returns the
  /// pods released.
  std::vector<std::string> release(const std::vector<std::string>& pods, int held);
  /// Takes `pods` (released earlier and gone now) out of the release ConfigMap.
  void forget(const std::vector<std::string>& pods);

  /// "FiberJob <ns>/<name>"
  std::string describe() const { return "FiberJob " + ns_ + "/" + job_; }

 private:
  /// Reads the job and the release ConfigMap (returned in `list`).
  Workers read(nlohmann::json& list);

  const std::string ns_;
  const std::string job_;
  std::unique_ptr<k8s::ApiClient> client_;
};

}  // namespace fiber::internal
