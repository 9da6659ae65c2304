#include "fiber/kubernetes/kubernetes_pod.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fiber/base/exit_status_report.h"
#include "fiber/errors.h"
#include "fiber/function_ref.h"
#include "mpi_bridge/launch_environment.h"

#ifndef FIBER_MPIRUN
#define FIBER_MPIRUN "mpirun"
#endif

namespace fiber::internal {
namespace {

std::string required(const char* name, const char* why) {
  const char* value = std::getenv(name);
  if (!value || !*value) {
    throw UsageError(std::string("fibermpi runs in Kubernetes mode (FIBER_K8S_ROLE is set) but ") +
                     name + " is not: " + why +
                     " (fiber-controller sets it in every pod of a FiberJob)");
  }
  return value;
}

}  // namespace

std::optional<KubernetesPod> KubernetesPod::from_environment() {
  const char* role = std::getenv("FIBER_K8S_ROLE");
  if (!role || !*role) return std::nullopt;
  KubernetesPod pod;
  const std::string role_text = role;
  if (role_text == "launcher") {
    pod.role = Role::kLauncher;
  } else if (role_text == "worker") {
    pod.role = Role::kWorker;
  } else {
    throw UsageError("FIBER_K8S_ROLE='" + role_text + "' is neither launcher nor worker");
  }
  pod.job = required("FIBER_K8S_JOB", "the name of the FiberJob");
  pod.ns = required("FIBER_K8S_NAMESPACE", "the namespace of the FiberJob");
  pod.pod_name = required("FIBER_K8S_POD_NAME", "the name of this pod");
  pod.name_service_uri = required("FIBER_NAME_SERVICE_URI", "the URI of the job's name service");
  if (const char* ip = std::getenv("FIBER_K8S_POD_IP")) pod.pod_ip = ip;
  if (const char* slots = std::getenv("FIBER_SLOTS_PER_WORKER"); slots && *slots) {
    char* end = nullptr;
    const long value = std::strtol(slots, &end, 10);
    if (*end != '\0' || value < 1 || value > 4096) {
      throw UsageError(std::string("FIBER_SLOTS_PER_WORKER='") + slots +
                       "' is not a whole number from 1 to 4096");
    }
    pod.slots_per_worker = static_cast<int>(value);
  }
  return pod;
}

void relaunch_under_mpirun(const KubernetesPod& pod, int argc, char** argv) {
  const char* override_path = std::getenv("FIBER_MPIRUN");
  const std::string mpirun = override_path && *override_path ? override_path : FIBER_MPIRUN;
  const int ranks = pod.role == KubernetesPod::Role::kLauncher ? 1 : pod.slots_per_worker;
  // mpirun's session directory and the launcher's status file: on a read-only root filesystem
  // they go to /dev/shm unless the pod mounts a volume on /tmp or sets TMPDIR.
  bridge::use_writable_temporary_directory();
  std::vector<std::string> words = {mpirun, "--ompi-server", pod.name_service_uri};
  // A rank that dies (a task that crashed its worker) must not take the other ranks of this pod
  // with it: the master runs its tasks elsewhere and keeps the rest. Containers often run as
  // root, which mpirun refuses unless told.
  for (auto& option : bridge::mpirun_options()) words.push_back(std::move(option));
  // Pods often drop every capability (Pod Security restricted): where the kernel's Yama LSM then
  // refuses process_vm_readv between a pod's ranks, Open MPI's single-copy (CMA) transfers fail,
  // so large messages go through the shared-memory buffers instead, unless the user chose.
  if (!std::getenv("OMPI_MCA_btl_vader_single_copy_mechanism")) {
    words.insert(words.end(), {"--mca", "btl_vader_single_copy_mechanism", "none"});
  }
  words.insert(words.end(), {"--bind-to", "none", "-n", std::to_string(ranks),
                             detail::ModuleTable::program_path()});
  for (int i = 1; i < argc; ++i) words.emplace_back(argv[i]);
  if (pod.role == KubernetesPod::Role::kLauncher) {
    std::_Exit(
        run_reporting_exit_status(words, bridge::temporary_directory(), "the launcher's program"));
  }
  std::vector<char*> exec_argv;
  for (auto& word : words) exec_argv.push_back(word.data());
  exec_argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(exec_argv[0], exec_argv.data());
  throw Error("fibermpi: cannot start " + mpirun + " to run this pod's MPI job (" +
              std::strerror(errno) +
              "); Kubernetes mode needs Open MPI 4.1's mpirun on PATH or in FIBER_MPIRUN");
}

}  // namespace fiber::internal
