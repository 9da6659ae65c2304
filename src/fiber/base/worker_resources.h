// What a pool asks for each of its workers (Pool::Options cpus_per_worker, memory_per_worker,
// gpus_per_worker, as Fiber's @meta(cpu, memory, gpu)) against what the place the program runs
// in can give a worker: a Slurm allocation, a FiberJob's worker template, or this machine. A
// request that cannot fit fails before any worker starts, naming both sides. Free of MPI.
// Internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fiber/base/config_file.h"

namespace fiber::internal {

/// One pool's request.
struct WorkerRequest {
  /// Who asks, in messages: empty for a pool ("Pool of 3 workers"), else a process's name.
  std::string who = {};
  int processes = 1;
  int cpus = 0;         ///< Cores per worker; 0 asks for nothing in particular.
  uint64_t memory = 0;  ///< detail::Bytes per worker; 0 asks for nothing in particular.
  int gpus = 0;
};

/// What this machine has (for a program run without a batch system or Kubernetes).
struct MachineFacts {
  int cores = 0;
  uint64_t memory = 0;  ///< detail::Bytes: physical memory, or the cgroup's limit when lower.
  int gpus = 0;
};

/// The NVIDIA GPUs this process may use, as CUDA names them: the entries of
/// CUDA_VISIBLE_DEVICES when it is set (indices or UUIDs; none when it is "" or starts with
/// "-1"), else the indices of /dev/nvidiaN, in order.
std::vector<std::string> visible_gpus(const EnvironmentLookup& environment);

/// This machine, read now: cores that hwloc shows this process's cgroup allows, memory, and
/// NVIDIA GPUs (CUDA_VISIBLE_DEVICES when set, else /dev/nvidiaN).
MachineFacts read_machine();

/// Throws fiber::UsageError when `request` cannot fit where the program runs, as `environment`
/// says:
/// - a FiberJob pod (FIBER_K8S_ROLE): each worker gets its pod's resources (the worker
///   template's limits, else its requests: FIBER_K8S_WORKER_CPU, _MEMORY, _GPUS as Kubernetes
///   quantities) shared by FIBER_SLOTS_PER_WORKER slots; what the template leaves open is not
///   checked;
/// - a Slurm allocation (SLURM_JOB_ID): a worker fits on one node (SLURM_JOB_CPUS_PER_NODE,
///   SLURM_MEM_PER_NODE or SLURM_MEM_PER_CPU, SLURM_GPUS_ON_NODE) and all of them in the
///   allocation;
/// - elsewhere `machine`: memory and GPUs must fit one worker; CPUs are not limited, since on a
///   laptop more workers than cores only run unbound (oversubscribed).
void check_worker_request(const WorkerRequest& request, const EnvironmentLookup& environment,
                          const MachineFacts& machine);

/// A Kubernetes resource quantity ("500m", "2", "1.5", "4Gi", "1e3") as a number. Throws
/// fiber::UsageError naming `what` when it is not one.
double parse_quantity(const std::string& text, const std::string& what);

/// Slurm's per-node CPU counts ("4(x2),2" = 4, 4, 2) summed, and their largest. Throws
/// fiber::UsageError when malformed.
struct NodeCpus {
  long total = 0;
  long largest = 0;
  int nodes = 0;
};
NodeCpus parse_slurm_cpus_per_node(const std::string& text);

}  // namespace fiber::internal
