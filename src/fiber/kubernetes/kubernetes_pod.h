// The Kubernetes mode of the runtime: a program started in a pod of a FiberJob learns its part
// (launcher or worker), its job and the job's name service from the environment the controller
// gives its pods, and runs itself under mpirun as an MPI job of its own. Internal.
#pragma once

#include <optional>
#include <string>

namespace fiber::internal {

/// What the FiberJob controller tells a pod (k8s/README.md lists the variables).
struct KubernetesPod {
  enum class Role { kLauncher, kWorker };
  Role role = Role::kLauncher;
  std::string job;               ///< FIBER_K8S_JOB: the FiberJob's name.
  std::string ns;                ///< FIBER_K8S_NAMESPACE
  std::string pod_name;          ///< FIBER_K8S_POD_NAME
  std::string name_service_uri;  ///< FIBER_NAME_SERVICE_URI: the job's ompi-server.
  std::string pod_ip;            ///< FIBER_K8S_POD_IP (may be empty)
  int slots_per_worker = 1;      ///< FIBER_SLOTS_PER_WORKER: ranks in each worker pod.

  /// The pod this process runs in, or nothing outside a FiberJob (FIBER_K8S_ROLE unset). Throws
  /// fiber::UsageError naming a missing or malformed variable.
  static std::optional<KubernetesPod> from_environment();

  /// The name the launcher publishes its rendezvous under on the name service.
  std::string service_name() const { return "fibermpi:" + ns + "/" + job; }
  /// ...and the address of its join turns (JoinTurns) under this one.
  std::string turns_name() const { return service_name() + "#turns"; }
  /// "FiberJob <ns>/<job>", for messages.
  std::string describe() const { return "FiberJob " + ns + "/" + job; }
};

/// Runs this program again as `mpirun --ompi-server <uri> --enable-recovery -n <ranks> <this
/// program> <args>`: the launcher as a job of one rank, a worker pod as a job of
/// slots_per_worker ranks, each meeting the others through the job's name service. A worker pod
/// becomes that mpirun. The launcher's process stays as mpirun's parent, because mpirun with
/// recovery on exits 0 whatever its rank's status: it forwards termination signals to mpirun and
/// exits with the status the program reported (base/exit_status_report.h), so that the pod's
/// exit code is the program's. Returns only by throwing fiber::Error (no mpirun, or it could not be
/// started). FIBER_MPIRUN names another mpirun.
[[noreturn]] void relaunch_under_mpirun(const KubernetesPod& pod, int argc, char** argv);

}  // namespace fiber::internal
